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
