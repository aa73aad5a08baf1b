package gateway

import (
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// closeCounter is a connection that notes its Close.
type closeCounter struct {
	net.Conn
	closed atomic.Bool
}

func (c *closeCounter) Close() error { c.closed.Store(true); return nil }

// closeAll closes the connections still silent, not those that sent a
// request, and every connection that arrives after it: one accepted while
// Shutdown runs would otherwise wait out net/http's 5 s grace.
func TestSilentConnsCloseAll(t *testing.T) {
	var s silentConns
	silent, spoke, late := &closeCounter{}, &closeCounter{}, &closeCounter{}
	s.track(silent, http.StateNew)
	s.track(spoke, http.StateNew)
	s.track(spoke, http.StateActive)
	s.closeAll()
	if !silent.closed.Load() || spoke.closed.Load() {
		t.Fatalf("after closeAll: silent closed %v (want true), one that sent a request closed %v (want false)",
			silent.closed.Load(), spoke.closed.Load())
	}
	s.track(late, http.StateNew)
	if !late.closed.Load() {
		t.Fatal("a connection that arrived after closeAll was left open")
	}
	if len(s.conns) != 0 {
		t.Fatalf("%d connections kept after closeAll", len(s.conns))
	}
}
