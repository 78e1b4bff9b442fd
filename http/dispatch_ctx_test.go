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
	if !c.EndsOnlyAtDeadline() {
		t.Fatal("EndsOnlyAtDeadline() = false before anything asked for Done")
	}
	asked := &deadlineCtx{deadline: time.Now().Add(time.Hour)}
	_ = asked.Done()
	if asked.EndsOnlyAtDeadline() {
		t.Fatal("EndsOnlyAtDeadline() = true once Done was asked for (its channel is there to wait on)")
	}
	asked.close()
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
		if c.EndsOnlyAtDeadline() {
			t.Fatal("EndsOnlyAtDeadline() = true after close")
		}
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

// TestDeadlineCtxAfterFunc: a context derived from the request's is canceled with it through
// AfterFunc (no goroutine of the standard library per derivation), at the deadline as at close,
// and a stopped AfterFunc never runs.
func TestDeadlineCtxAfterFunc(t *testing.T) {
	c := &deadlineCtx{deadline: time.Now().Add(30 * time.Millisecond)}
	child, cancel := context.WithTimeout(c, time.Hour)
	defer cancel()
	if n := afters(c); n != 1 {
		t.Fatalf("the derived context registered %d AfterFunc functions, want 1", n)
	}
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a derived context not canceled at the parent's deadline (nothing asked for Done)")
	}
	if !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Fatalf("child.Err() = %v", child.Err())
	}

	c = &deadlineCtx{deadline: time.Now().Add(time.Hour)}
	ran := make(chan struct{}, 1)
	stop := context.AfterFunc(c, func() { ran <- struct{}{} })
	if !stop() {
		t.Fatal("stop before the end = false")
	}
	child2, cancel2 := context.WithCancel(c)
	defer cancel2()
	cancel2() // a derived context canceled first unregisters itself
	if n := afters(c); n != 0 {
		t.Fatalf("%d AfterFunc functions left after stop and the child's cancel", n)
	}
	_ = child2
	c.close()
	select {
	case <-ran:
		t.Fatal("a stopped AfterFunc ran")
	case <-time.After(50 * time.Millisecond):
	}
	done := make(chan struct{})
	context.AfterFunc(c, func() { close(done) }) // after the end: runs at once
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFunc on an ended context did not run")
	}
}

func afters(c *deadlineCtx) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.afters)
}
