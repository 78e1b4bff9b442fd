package http

import (
	"net"
	"testing"
	"time"
)

// deadlineConn counts the deadlines that reach the connection.
type deadlineConn struct {
	net.Conn
	reads, writes []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error { c.reads = append(c.reads, t); return nil }
func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.writes = append(c.writes, t)
	return nil
}

// A busy keep-alive connection moves its deadlines about once a second; an earlier deadline, a
// later one past the slack and clearing one always reach the connection.
func TestCoarseDeadlines(t *testing.T) {
	inner := &deadlineConn{}
	c := &lingerConn{Conn: inner}
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for i := range 100 { // 100 requests 5 ms apart: idle, read and write deadlines each time
		now := t0.Add(time.Duration(i) * 5 * time.Millisecond)
		_ = c.SetReadDeadline(now.Add(connTimeout))
		_ = c.SetReadDeadline(now.Add(connTimeout))
		_ = c.SetWriteDeadline(now.Add(connTimeout))
	}
	if len(inner.reads) != 1 || len(inner.writes) != 1 {
		t.Fatalf("over half a second, %d read and %d write deadlines reached the connection, want 1 each", len(inner.reads), len(inner.writes))
	}
	_ = c.SetReadDeadline(t0.Add(connTimeout + 2*time.Second)) // beyond the slack
	_ = c.SetReadDeadline(t0.Add(time.Second))                 // earlier
	_ = c.SetReadDeadline(time.Time{})                         // none
	_ = c.SetReadDeadline(time.Time{})
	_ = c.SetReadDeadline(t0.Add(time.Second)) // after none
	want := []time.Time{t0.Add(connTimeout), t0.Add(connTimeout + 2*time.Second), t0.Add(time.Second), {}, {}, t0.Add(time.Second)}
	if len(inner.reads) != len(want) {
		t.Fatalf("read deadlines %v, want %v", inner.reads, want)
	}
	for i := range want {
		if !inner.reads[i].Equal(want[i]) {
			t.Fatalf("read deadline %d is %v, want %v", i, inner.reads[i], want[i])
		}
	}
}
