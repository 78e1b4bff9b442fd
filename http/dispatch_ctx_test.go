package http

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDeadlineCtx: the lazy request context behaves as context.WithTimeout's: done at its deadline
// (asked before or after it passes), canceled once the handler returned.
func TestDeadlineCtx(t *testing.T) {
	c := &deadlineCtx{deadline: time.Now().Add(50 * time.Millisecond)}
	if d, ok := c.Deadline(); !ok || !d.Equal(c.deadline) {
		t.Fatalf("Deadline() = %v, %v", d, ok)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("Err() before the deadline = %v", err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed at the deadline")
	}
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err() after the deadline = %v", err)
	}

	late := &deadlineCtx{deadline: time.Now().Add(-time.Millisecond)}
	if err := late.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err() past the deadline, Done never asked = %v", err)
	}
	<-late.Done()

	for _, askFirst := range []bool{false, true} {
		c := &deadlineCtx{deadline: time.Now().Add(time.Hour)}
		child, cancel := context.WithCancel(c)
		if askFirst {
			_ = c.Done()
		}
		c.close()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed after close")
		}
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err() after close = %v", err)
		}
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a child not canceled by close")
		}
		cancel()
	}
}
