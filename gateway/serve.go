package gateway

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// discardLog silences net/http's own error log (handshake noise from
// clients); the gateway logs what matters itself.
var discardLog = log.New(io.Discard, "", 0)

// tunnel is one hijacked client connection (and its upstream, when blind).
type tunnel struct {
	conns []net.Conn
	mu    sync.Mutex
	srv   *http.Server // the inner server of an inspected tunnel
	done  chan struct{}
}

func (t *tunnel) setServer(s *http.Server) {
	t.mu.Lock()
	t.srv = s
	t.mu.Unlock()
}

func (t *tunnel) close() {
	for _, c := range t.conns {
		if c != nil {
			c.Close()
		}
	}
}

// track registers a tunnel so that Shutdown can drain it. It returns nil, and
// closes the connections, when the gateway is already draining.
func (g *Gateway) track(conns ...net.Conn) *tunnel {
	t := &tunnel{conns: conns, done: make(chan struct{})}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.draining {
		t.close()
		return nil
	}
	if g.tunnels == nil {
		g.tunnels = make(map[*tunnel]struct{})
	}
	g.tunnels[t] = struct{}{}
	return t
}

func (g *Gateway) untrack(t *tunnel) {
	t.close()
	g.mu.Lock()
	delete(g.tunnels, t)
	g.mu.Unlock()
	close(t.done)
}

// OpenTunnels reports how many CONNECT tunnels are open.
func (g *Gateway) OpenTunnels() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.tunnels)
}

// Serve accepts proxy clients on l until Shutdown.
func (g *Gateway) Serve(l net.Listener) error {
	srv := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 15 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          discardLog,
	}
	g.mu.Lock()
	if g.draining {
		g.mu.Unlock()
		return http.ErrServerClosed
	}
	g.server = srv
	g.mu.Unlock()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting clients, lets open tunnels finish the request
// they are serving (inspected tunnels are closed once idle), and closes what
// is still open when ctx ends.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.draining = true
	srv := g.server
	open := make([]*tunnel, 0, len(g.tunnels))
	for t := range g.tunnels {
		open = append(open, t)
	}
	g.mu.Unlock()

	var err error
	if srv != nil {
		err = srv.Shutdown(ctx)
	}
	for _, t := range open {
		t.mu.Lock()
		inner := t.srv
		t.mu.Unlock()
		if inner != nil {
			// Closes the tunnel's connection once its current request is done.
			go inner.Shutdown(ctx)
		}
	}
	for _, t := range open {
		select {
		case <-t.done:
		case <-ctx.Done():
			t.close()
			if err == nil {
				err = ctx.Err()
			}
		}
	}
	g.mu.Lock()
	for _, tr := range g.transports {
		tr.CloseIdleConnections()
	}
	g.mu.Unlock()
	return err
}
