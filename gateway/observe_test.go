package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/sluice-egress/sluice/gateway/guard"
)

// pipeDialer hands out one end of a pipe; the test holds the other.
type pipeDialer struct {
	peer net.Conn
	err  error
}

func (d *pipeDialer) Dial(context.Context, guard.Target) (net.Conn, error) {
	if d.err != nil {
		return nil, d.err
	}
	c, peer := net.Pipe()
	d.peer = peer
	return c, nil
}

func TestCountingDialer(t *testing.T) {
	var sent, received atomic.Int64
	inner := &pipeDialer{}
	d := &CountingDialer{Dialer: inner, Sent: func(n int) { sent.Add(int64(n)) }, Received: func(n int) { received.Add(int64(n)) }}
	c, err := d.Dial(context.Background(), guard.Target{Host: "up.example.test", Port: 443})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		io.CopyN(io.Discard, inner.peer, 5)
		inner.peer.Write([]byte("0123456789"))
		inner.peer.Close()
	}()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	c.Close()
	if sent.Load() != 5 || received.Load() != 10 || len(b) != 10 {
		t.Fatalf("sent %d, received %d (read %d)", sent.Load(), received.Load(), len(b))
	}

	denied := errors.New("address denied")
	if _, err := (&CountingDialer{Dialer: &pipeDialer{err: denied}, Sent: func(int) {}}).Dial(context.Background(), guard.Target{}); !errors.Is(err, denied) {
		t.Fatalf("dial error lost: %v", err)
	}
}
