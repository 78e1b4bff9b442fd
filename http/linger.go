package http

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Lingering close. A request refused on its headers (413, 401, 503...) is answered and its
// connection closed with the body still on the wire. Closing a TCP socket that has unread input
// makes the kernel send a reset instead of a FIN, and a reset that reaches the client before it
// has read the response throws the response away: the client sees "connection reset by peer"
// instead of the 413 (Go's net/http server avoids this the same way, closeWriteAndWait).
// A connection marked to linger therefore closes in three steps, in the background: half-close
// (the client reads the response and then end of stream), read and discard what the client still
// sends for at most lingerFor or lingerBytes, then close.
const (
	lingerFor   = time.Second
	lingerBytes = 4 << 20
)

// lingerListener hands out connections that can linger on close.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c}, nil
}

type lingerConn struct {
	net.Conn
	linger atomic.Bool
	once   sync.Once
	// readBy and writeBy are the deadlines in force (Unix nanoseconds, 0: none): see deadlineSlack.
	readBy, writeBy atomic.Int64
	// auth is the principal of the key the connection sent last (connAuth).
	auth connAuth
	// buckets are the rate-limit buckets of its last requests (connBuckets).
	buckets connBuckets
}

func (c *lingerConn) Close() error {
	if !c.linger.Load() {
		var err error
		c.once.Do(func() { err = c.Conn.Close() })
		return err
	}
	c.once.Do(func() {
		go func() {
			if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
			_ = c.Conn.SetReadDeadline(time.Now().Add(lingerFor))
			_, _ = io.CopyN(io.Discard, c.Conn, lingerBytes)
			_ = c.Conn.Close()
		}()
	})
	return nil
}

// deadlineSlack is how much earlier than asked a connection's deadline may fire. fasthttp moves a
// keep-alive connection's deadlines at every request (the idle one, the read one, the write one:
// each a timer change in the runtime's poller, together about 4 % of the CPU of a small GET); a
// deadline asked for within deadlineSlack after the one in force is not set again, so a busy
// connection changes each timer about once a second. Earlier deadlines, and clearing one, are
// always set.
const deadlineSlack = time.Second

func (c *lingerConn) SetDeadline(t time.Time) error {
	c.readBy.Store(unixNano(t))
	c.writeBy.Store(unixNano(t))
	return c.Conn.SetDeadline(t)
}

func (c *lingerConn) SetReadDeadline(t time.Time) error {
	if coarseDeadline(&c.readBy, t) {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *lingerConn) SetWriteDeadline(t time.Time) error {
	if coarseDeadline(&c.writeBy, t) {
		return nil
	}
	return c.Conn.SetWriteDeadline(t)
}

// coarseDeadline records t as the deadline in force in by and reports false (set it), unless the
// deadline in force is at most deadlineSlack earlier than t (true: leave it).
func coarseDeadline(by *atomic.Int64, t time.Time) bool {
	n, old := unixNano(t), by.Load()
	if old != 0 && n >= old && n-old < int64(deadlineSlack) {
		return true
	}
	by.Store(n)
	return false
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
