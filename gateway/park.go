package gateway

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Parking idle HTTP/1.1 tunnels. net/http holds a connection's 4 KiB reader
// and 4 KiB writer, and the goroutine that serves it, for the connection's
// whole life, idle or not: most of what an idle inspected tunnel costs. A
// connection that has been quiet for parkAfter between requests is handed
// back instead (net/http sees its end and returns its buffers to its pools);
// the tunnel's listener keeps the TLS connection and, when the client's next
// request begins, hands net/http a fresh connection that replays the byte it
// read. The client sees one kept-alive connection throughout.
//
// Nothing of a next request is ever dropped: a connection parks only when
// net/http is between requests (ConnState idle) and asks for a whole buffer,
// which its reader does only when it holds no byte of the connection.

// parkAfter is how long a connection idles before it is parked: long enough
// that back-to-back requests never pay for it, short against the minutes a
// kept-alive connection of an agent idles.
var parkAfter = time.Second

// netHTTPReadBuf is the size of net/http's connection reader: a Read that
// asks for exactly that much comes from an empty reader.
const netHTTPReadBuf = 4 << 10

// parkListener serves one tunnel's connection to an http.Server, again after
// every park, until the connection ends.
type parkListener struct {
	conn     net.Conn // the tunnel's TLS connection as net/http writes to it
	onClosed func()   // once, when the connection is closed for good
	onPark   func(delta int)
	watch    *clientWatch // told when a read of the client's connection fails

	mu      sync.Mutex
	pending *parkConn     // not yet accepted
	parked  chan struct{} // closed when the served connection parks
	until   time.Time     // the idle deadline net/http had set when it parked
	closed  bool
	stopped chan struct{} // closed by Close: Serve must return (Shutdown waits for it)
	done    chan struct{} // closed when the connection ends
	ended   sync.Once
}

func newParkListener(c net.Conn, onClosed func(), onPark func(int)) *parkListener {
	l := &parkListener{conn: c, onClosed: onClosed, onPark: onPark, stopped: make(chan struct{}), done: make(chan struct{})}
	l.pending = l.newConn(c)
	return l
}

func (l *parkListener) newConn(c net.Conn) *parkConn {
	l.parked = make(chan struct{})
	return &parkConn{Conn: c, l: l, parked: l.parked}
}

// Accept hands out the connection, then, after each park, waits for the
// client's next bytes and hands out a connection that replays them.
func (l *parkListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if c := l.pending; c != nil && !l.closed {
		l.pending = nil
		l.mu.Unlock()
		return c, nil
	}
	parked := l.parked
	l.mu.Unlock()
	select {
	case <-parked:
	case <-l.done:
		return nil, net.ErrClosed
	case <-l.stopped:
		return nil, net.ErrClosed
	}
	l.mu.Lock()
	until := l.until
	l.mu.Unlock()
	l.onPark(1)
	defer l.onPark(-1)
	// Wait for the next request with net/http's own idle deadline.
	l.conn.SetReadDeadline(until)
	var first [1]byte
	n, _ := l.conn.Read(first[:])
	if n == 0 { // idle timeout, the client left, or the tunnel was closed
		l.end()
		return nil, net.ErrClosed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.endLocked()
		return nil, net.ErrClosed
	}
	replay := &prefixConn{Conn: l.conn, r: io.MultiReader(bytes.NewReader(first[:n:n]), l.conn)}
	return l.newConn(replay), nil
}

// Close stops handing out connections (http.Server.Shutdown, or the tunnel
// served its last): a parked connection ends now; one being served ends when
// net/http lets go of it.
func (l *parkListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.stopped)
	}
	select {
	case <-l.parked:
		l.endLocked() // parked: nobody else will close it
	default:
	}
	return nil
}

func (l *parkListener) Addr() net.Addr { return l.conn.LocalAddr() }

// park is called by the served connection that net/http is letting go of
// while idle: the listener keeps it unless it is closing.
func (l *parkListener) park(c *parkConn, until time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || c.parked != l.parked {
		return false
	}
	l.until = until
	close(l.parked)
	return true
}

// end closes the tunnel's connection for good.
func (l *parkListener) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked()
}

func (l *parkListener) endLocked() {
	l.ended.Do(func() {
		if !l.closed {
			l.closed = true
			close(l.stopped)
		}
		l.conn.Close()
		close(l.done)
		if l.onClosed != nil {
			l.onClosed()
		}
	})
}

// parkConn is the tunnel's connection as net/http serves it, from one park
// to the next.
type parkConn struct {
	net.Conn
	l      *parkListener
	parked chan struct{} // the listener's, for this connection

	mu       sync.Mutex
	idle     bool      // net/http is between requests (inspectConn's ConnState)
	deadline time.Time // the read deadline net/http set last
	gone     bool      // parked: net/http's Close leaves the connection open
}

func (c *parkConn) setIdle(idle bool) {
	c.mu.Lock()
	c.idle = idle
	c.mu.Unlock()
}

func (c *parkConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *parkConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *parkConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	idle, deadline := c.idle, c.deadline
	c.mu.Unlock()
	if !idle || len(p) != netHTTPReadBuf || !deadline.IsZero() && time.Until(deadline) <= parkAfter {
		n, err := c.Conn.Read(p)
		if err != nil && !isTimeout(err) && c.l.watch != nil {
			// The client left, or the tunnel was closed: net/http's
			// background read sees it while a request waits upstream.
			c.l.watch.clientGone()
		}
		return n, err
	}
	// Between requests, net/http holding nothing of the connection: wait
	// parkAfter for the next request here, then park.
	c.Conn.SetReadDeadline(time.Now().Add(parkAfter))
	n, err := c.Conn.Read(p)
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		c.Conn.SetReadDeadline(deadline)
		return n, err
	}
	if !c.l.park(c, deadline) {
		c.Conn.SetReadDeadline(deadline)
		return c.Conn.Read(p) // closing: wait as net/http asked
	}
	c.mu.Lock()
	c.gone = true
	c.mu.Unlock()
	return 0, io.EOF
}

// Close ends the tunnel, unless net/http is letting go of a parked one.
func (c *parkConn) Close() error {
	c.mu.Lock()
	gone := c.gone
	c.mu.Unlock()
	if gone {
		return nil
	}
	c.l.end()
	return nil
}
