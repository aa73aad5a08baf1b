package gateway

import (
	"context"
	"net"

	"github.com/sluice-egress/sluice/gateway/guard"
)

// CountingDialer wraps a Dialer and reports the bytes that cross every
// upstream connection it opens (inspected and passthrough alike), for
// metrics. It sees no content, only counts.
type CountingDialer struct {
	// Dialer is required: it does the checking and dialing.
	Dialer Dialer
	// Sent and Received, if set, are called with the size of each write to
	// and each read from an upstream connection.
	Sent, Received func(n int)
}

var _ Dialer = (*CountingDialer)(nil)

// Dial dials through Dialer and wraps the connection.
func (d *CountingDialer) Dial(ctx context.Context, t guard.Target) (net.Conn, error) {
	c, err := d.Dialer.Dial(ctx, t)
	if err != nil || (d.Sent == nil && d.Received == nil) {
		return c, err
	}
	return &countingConn{Conn: c, sent: d.Sent, received: d.Received}, nil
}

type countingConn struct {
	net.Conn
	sent, received func(int)
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.received != nil {
		c.received(n)
	}
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 && c.sent != nil {
		c.sent(n)
	}
	return n, err
}
