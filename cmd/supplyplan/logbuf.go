package main

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// lineBuffer is the log's writer: it keeps whole lines (each Write is one record of the slog
// handler) and writes them in batches, so that a line per request does not cost a system call per
// request. Lines wait at most flushAfter; a WARN or ERROR line is written at once with those
// before it, and so is everything on Close. A crash may lose the last flushAfter of INFO lines.
type lineBuffer struct {
	w          io.Writer
	flushAfter time.Duration

	mu      sync.Mutex
	buf     []byte
	pending bool // a timed flush is scheduled
	closed  bool
}

// lineBufferMax is how much waits before a Write flushes itself.
const lineBufferMax = 64 << 10

func newLineBuffer(w io.Writer, flushAfter time.Duration) *lineBuffer {
	return &lineBuffer{w: w, flushAfter: flushAfter}
}

var urgent = [][]byte{[]byte("level=WARN"), []byte("level=ERROR"), []byte(`"level":"WARN"`), []byte(`"level":"ERROR"`)}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.w.Write(p)
	}
	if len(b.buf)+len(p) > lineBufferMax {
		if err := b.flushLocked(); err != nil {
			return 0, err
		}
	}
	b.buf = append(b.buf, p...)
	head := p[:min(len(p), 96)] // the level comes right after the time
	for _, u := range urgent {
		if bytes.Contains(head, u) {
			return len(p), b.flushLocked()
		}
	}
	if !b.pending {
		b.pending = true
		time.AfterFunc(b.flushAfter, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.pending = false
			_ = b.flushLocked()
		})
	}
	return len(p), nil
}

func (b *lineBuffer) flushLocked() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}

// Close writes what waits; later writes go straight through.
func (b *lineBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.flushLocked()
}
