package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"
)

// flatHandler is the request log's slog.Handler: for flat records whose attributes are strings,
// integers and durations (the request lines) it writes the line slog's TextHandler or JSONHandler
// would write, without their generality (groups, ReplaceAttr, WithAttrs), at a fraction of the
// cost: one line per request must stay cheap next to the request. Any other record goes to next,
// the standard handler of the same format and writer.
type flatHandler struct {
	json  bool
	level slog.Leveler
	w     io.Writer
	mu    *sync.Mutex
	next  slog.Handler
	// second is the time of the last line down to its second, formatted (stampOf).
	second *atomic.Pointer[stamp]
}

// stamp is a second's formatted date and time ("2006-01-02T15:04:05") and zone ("Z07:00"): lines
// of the same second only append their fraction between the two. Formatting the whole time was a
// quarter of a request line's cost.
type stamp struct {
	sec        int64
	loc        *time.Location
	head, zone []byte
}

func (h *flatHandler) stampOf(t time.Time) *stamp {
	if s := h.second.Load(); s != nil && s.sec == t.Unix() && s.loc == t.Location() {
		return s
	}
	s := &stamp{sec: t.Unix(), loc: t.Location(), head: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
	h.second.Store(s)
	return s
}

// appendTime appends t as time.RFC3339Nano (JSON) or "2006-01-02T15:04:05.000Z07:00" (text)
// formats it, slog's formats of a record's time.
func (h *flatHandler) appendTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		if h.json {
			return t.AppendFormat(b, time.RFC3339Nano)
		}
		return t.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	}
	s := h.stampOf(t)
	b = append(b, s.head...)
	ns := t.Nanosecond()
	if h.json {
		if ns != 0 {
			var frac [10]byte
			frac[0] = '.'
			for i, v := 9, ns; i > 0; i, v = i-1, v/10 {
				frac[i] = byte('0' + v%10)
			}
			n := 10
			for frac[n-1] == '0' {
				n--
			}
			b = append(b, frac[:n]...)
		}
	} else {
		ms := ns / 1e6
		b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	}
	return append(b, s.zone...)
}

// newFlatHandler returns a handler writing text or JSON lines to w at level and above.
func newFlatHandler(w io.Writer, level slog.Leveler, format string) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	h := &flatHandler{json: format == "json", level: level, w: w, mu: &sync.Mutex{}, second: new(atomic.Pointer[stamp])}
	if h.json {
		h.next = slog.NewJSONHandler(w, opts)
	} else {
		h.next = slog.NewTextHandler(w, opts)
	}
	return h
}

func (h *flatHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *flatHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.next.WithAttrs(as) }

func (h *flatHandler) WithGroup(name string) slog.Handler { return h.next.WithGroup(name) }

var flatBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (h *flatHandler) Handle(ctx context.Context, r slog.Record) error {
	flat := true
	r.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindString, slog.KindInt64, slog.KindDuration:
		default:
			flat = false
		}
		return flat
	})
	if !flat {
		return h.next.Handle(ctx, r)
	}
	bp := flatBufs.Get().(*[]byte)
	b := h.head((*bp)[:0], r.Time, r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindString:
			b = h.str(b, a.Key, a.Value.String())
		case slog.KindInt64:
			b = h.int(b, a.Key, a.Value.Int64())
		case slog.KindDuration:
			b = h.duration(b, a.Key, a.Value.Duration())
		}
		return true
	})
	return h.end(bp, b)
}

// WriteRequestLine writes the request log's line (http.RequestLineWriter) without a slog.Record:
// the line Handle writes for the record of message "request" with these attributes, in this
// order (org and code only when set). The record, its attributes and the two passes over them were
// a third of a request line's cost. id and method are read during the call only.
func (h *flatHandler) WriteRequestLine(t time.Time, level slog.Level, id, method []byte, route, org string, status int, code string, took time.Duration) error {
	bp := flatBufs.Get().(*[]byte)
	b := h.head((*bp)[:0], t, level, "request")
	b = h.str(b, "requestId", unsafe.String(unsafe.SliceData(id), len(id)))
	b = h.str(b, "method", unsafe.String(unsafe.SliceData(method), len(method)))
	b = h.str(b, "route", route)
	b = h.int(b, "status", int64(status))
	b = h.duration(b, "duration", took)
	if org != "" {
		b = h.str(b, "org", org)
	}
	if code != "" {
		b = h.str(b, "code", code)
	}
	return h.end(bp, b)
}

// head starts a line: its time, level and message.
func (h *flatHandler) head(b []byte, t time.Time, level slog.Level, msg string) []byte {
	if h.json {
		b = append(b, `{"time":"`...)
		b = h.appendTime(b, t)
		b = append(b, `","level":"`...)
		b = append(b, level.String()...)
		b = append(b, `","msg":`...)
		return appendJSONString(b, msg)
	}
	b = append(b, "time="...)
	b = h.appendTime(b, t)
	b = append(b, " level="...)
	b = append(b, level.String()...)
	b = append(b, " msg="...)
	return appendTextString(b, msg)
}

// key starts an attribute.
func (h *flatHandler) key(b []byte, k string) []byte {
	if h.json {
		b = append(b, ',')
		b = appendJSONString(b, k)
		return append(b, ':')
	}
	b = append(b, ' ')
	b = appendTextString(b, k)
	return append(b, '=')
}

func (h *flatHandler) str(b []byte, k, v string) []byte {
	b = h.key(b, k)
	if h.json {
		return appendJSONString(b, v)
	}
	return appendTextString(b, v)
}

func (h *flatHandler) int(b []byte, k string, v int64) []byte {
	return strconv.AppendInt(h.key(b, k), v, 10)
}

func (h *flatHandler) duration(b []byte, k string, d time.Duration) []byte {
	b = h.key(b, k)
	if h.json {
		return strconv.AppendInt(b, int64(d), 10)
	}
	return append(b, d.String()...)
}

// end finishes the line in b (from the pooled buffer bp) and writes it.
func (h *flatHandler) end(bp *[]byte, b []byte) error {
	if h.json {
		b = append(b, '}')
	}
	b = append(b, '\n')
	h.mu.Lock()
	_, err := h.w.Write(b)
	h.mu.Unlock()
	if cap(b) <= 4096 {
		*bp = b
		flatBufs.Put(bp)
	}
	return err
}

// appendJSONString appends s as a JSON string, escaped as slog's JSONHandler escapes it (HTML
// characters are left as they are). Runs of plain characters are copied at once.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			if r == utf8.RuneError {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// textQuoted marks the ASCII bytes that make slog's TextHandler quote a string: space and control
// characters, '=', '"' and DEL.
var textQuoted = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = c <= ' ' || c == '=' || c == '"' || c == 0x7f
	}
	return t
}()

// appendTextString appends s as slog's TextHandler does: bare, or quoted when it is empty or holds
// a space, '=', '"' or anything not printable.
func appendTextString(b []byte, s string) []byte {
	if !textNeedsQuoting(s) {
		return append(b, s...)
	}
	return strconv.AppendQuote(b, s)
}

func textNeedsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if textQuoted[c] {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}
