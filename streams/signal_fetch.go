package streams

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/segmentio/kafka-go"
)

// partitionReader reads one partition with fetch requests on a connection to its leader
// (kafka.Conn.ReadBatchWith), in the calling goroutine. kafka.Reader does the same in a goroutine
// of its own and hands every message over a channel, resetting the connection's read deadline
// (time.Now and a syscall) before each one: about a sixth of the consumer's CPU per signal during
// a backlog drain. Here the deadline is set once per fetch and once per consumer batch.
//
// Errors are handled as kafka.Reader handles them: a connection or leadership error closes the
// connection and the next read dials the leader again, with backoff; an offset before the log
// start moves to the log start (one past the end is retried); Kafka errors it does not expect, and connection attempts failing
// maxReadAttempts times in a row, are returned (the fetcher then ends the generation).
type partitionReader struct {
	ctx       context.Context // the partition's: its end closes the connection, unblocking a read
	brokers   []string
	topic     string
	partition int
	maxBytes  int
	maxWait   time.Duration // broker long poll of a fetch with nothing to return
	log       *slog.Logger

	conn   *kafka.Conn
	batch  *kafka.Batch
	offset int64       // next offset to read; kafka.FirstOffset until resolved
	fails  int         // consecutive failed reads or connection attempts
	stop   func() bool // undoes the context.AfterFunc that closes conn
}

const (
	maxReadAttempts = 3
	readBackoffMin  = 100 * time.Millisecond
	readBackoffMax  = time.Second
	// readTimeout bounds reading one fetch response once the broker answers.
	readTimeout = 10 * time.Second
)

// errWindowOver is returned by next when the current fetch is used up after until.
var errWindowOver = errors.New("batch window over")

func newPartitionReader(ctx context.Context, brokers []string, topic string, partition int, offset int64,
	maxBytes int, maxWait time.Duration, log *slog.Logger) *partitionReader {
	return &partitionReader{ctx: ctx, brokers: brokers, topic: topic, partition: partition, offset: offset,
		maxBytes: maxBytes, maxWait: maxWait, log: log}
}

// Close closes the connection.
func (r *partitionReader) Close() error {
	r.disconnect()
	return nil
}

func (r *partitionReader) disconnect() {
	if r.batch != nil {
		_ = r.batch.Close()
		r.batch = nil
	}
	if r.conn != nil {
		r.stop()
		_ = r.conn.Close()
		r.conn = nil
	}
}

// refresh sets the connection's read deadline for a run of reads: a fetch left open while the
// consumer waited for an in-flight slot would otherwise time out.
func (r *partitionReader) refresh() {
	if r.conn != nil {
		_ = r.conn.SetReadDeadline(time.Now().Add(r.maxWait + readTimeout))
	}
}

// next returns the partition's next message. It waits for one as long as ctx lasts when until is
// zero; otherwise, once the messages already fetched are used up and until has passed, it returns
// errWindowOver, and a fetch it makes waits at most until then for new messages. Call refresh
// before a run of next calls.
func (r *partitionReader) next(until time.Time) (kafka.Message, error) {
	ctx := r.ctx
	for {
		if err := ctx.Err(); err != nil {
			return kafka.Message{}, err
		}
		if r.batch != nil {
			m, err := r.batch.ReadMessage()
			if err == nil {
				r.offset = m.Offset + 1
				r.fails = 0
				return m, nil
			}
			_ = r.batch.Close()
			r.batch = nil
			if err := r.failed(ctx, err); err != nil {
				return kafka.Message{}, err
			}
			continue
		}
		wait := r.maxWait
		if !until.IsZero() {
			left := time.Until(until)
			if left <= 0 {
				return kafka.Message{}, errWindowOver
			}
			wait = min(wait, left)
		}
		if r.conn == nil {
			if err := r.connect(ctx); err != nil {
				return kafka.Message{}, err
			}
			continue
		}
		_ = r.conn.SetReadDeadline(time.Now().Add(wait + readTimeout))
		r.batch = r.conn.ReadBatchWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: r.maxBytes, MaxWait: wait})
	}
}

// failed handles the error that ended a fetch: nil to go on reading.
func (r *partitionReader) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		r.disconnect()
		return ctx.Err()
	}
	switch {
	case errors.Is(err, io.EOF): // the fetch is used up
		r.fails = 0
		return nil
	case errors.Is(err, kafka.RequestTimedOut):
		return nil
	}
	var kerr kafka.Error
	if errors.As(err, &kerr) && !errors.Is(err, kafka.NotLeaderForPartition) &&
		!errors.Is(err, kafka.UnknownTopicOrPartition) && !errors.Is(err, kafka.OffsetOutOfRange) {
		r.disconnect()
		return err
	}
	// A broken connection, the partition moved, or the offset is out of range (connect moves an
	// offset before the log start to it): dial the leader again.
	r.log.Warn("read partition; reconnecting", "partition", r.partition, "offset", r.offset, "err", err)
	r.disconnect()
	return r.backoff(ctx, err)
}

// backoff counts a failure and sleeps before the next attempt; it returns err once there were
// maxReadAttempts in a row.
func (r *partitionReader) backoff(ctx context.Context, err error) error {
	r.fails++
	if r.fails >= maxReadAttempts {
		r.fails = 0
		return err
	}
	d := min(readBackoffMin<<(r.fails-1), readBackoffMax)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// connect dials the partition's leader and seeks to the next offset (resolving FirstOffset, or an
// offset before the log start, to the first offset).
func (r *partitionReader) connect(ctx context.Context) error {
	var err error
	for _, b := range r.brokers {
		var conn *kafka.Conn
		conn, err = fetchDialer.DialLeader(ctx, "tcp", b, r.topic, r.partition)
		if err != nil {
			continue
		}
		var first, last int64
		_ = conn.SetDeadline(time.Now().Add(readTimeout))
		first, last, err = conn.ReadOffsets()
		if err == nil {
			switch {
			case r.offset == kafka.LastOffset:
				r.offset = last
			case r.offset < first: // FirstOffset too
				if r.offset >= 0 {
					r.log.Warn("reading before the partition's first offset; skipping ahead",
						"partition", r.partition, "offset", r.offset, "first", first)
				}
				r.offset = first
			}
			_, err = conn.Seek(r.offset, kafka.SeekAbsolute)
		}
		if err != nil {
			_ = conn.Close()
			break
		}
		_ = conn.SetDeadline(time.Time{})
		r.conn = conn
		r.stop = context.AfterFunc(ctx, func() { _ = conn.Close() })
		r.fails = 0
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.log.Warn("connect to partition leader", "partition", r.partition, "err", err)
	return r.backoff(ctx, err)
}

// fetchReadBuffer is the read buffer of a partition reader's connection. kafka-go reads a
// connection through a 4 KiB bufio.Reader: a read syscall per 4 KiB of a fetch response of
// megabytes. Behind a larger buffer it is one per 256 KiB, for an extra copy of the bytes.
const fetchReadBuffer = 256 << 10

// fetchDialer is kafka.DefaultDialer with connections read through fetchReadBuffer.
var fetchDialer = &kafka.Dialer{
	ClientID:  kafka.DefaultDialer.ClientID,
	Timeout:   kafka.DefaultDialer.Timeout,
	DualStack: kafka.DefaultDialer.DualStack,
	DialFunc: func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, fetchReadBuffer)}, nil
	},
}

// bufferedConn is a net.Conn read through a bufio.Reader. Deadlines apply to the reads that reach
// the connection; what is buffered is returned at once.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
