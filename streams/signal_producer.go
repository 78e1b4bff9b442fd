package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/supplyplan/supplyplan"
)

// SignalProducerConfig configures a SignalProducer. Zero values take the defaults in brackets.
type SignalProducerConfig struct {
	Brokers []string // bootstrap brokers, host:port (required)
	Topic   string   // [DefaultSignalTopic]
	// BatchSize caps the messages of one produce request per partition [1000].
	BatchSize int
	// BatchTimeout is how long a partial batch waits for more messages [2ms]. (kafka-go's own
	// default, 1s, makes every small synchronous write take a second.)
	BatchTimeout time.Duration
	Logger       *slog.Logger
}

// SignalProducer writes demand signals to a topic as JSON, keyed by organization id, so that each
// organization's signals land on one partition (murmur2, like the Java client's default
// partitioner). Writes wait for every in-sync replica. It is safe for concurrent use.
type SignalProducer struct {
	cfg SignalProducerConfig
	w   *kafka.Writer

	mu     sync.Mutex
	closed bool
}

// NewSignalProducer returns an unopened producer.
func NewSignalProducer(cfg SignalProducerConfig) *SignalProducer { return &SignalProducer{cfg: cfg} }

// Open checks the configuration and prepares the writer (connections are made on first write).
func (p *SignalProducer) Open() error {
	if len(p.cfg.Brokers) == 0 {
		return errors.New("signal producer: no brokers")
	}
	if p.cfg.Topic == "" {
		p.cfg.Topic = DefaultSignalTopic
	}
	if p.cfg.BatchSize <= 0 {
		p.cfg.BatchSize = 1000
	}
	if p.cfg.BatchTimeout <= 0 {
		p.cfg.BatchTimeout = 2 * time.Millisecond
	}
	if p.cfg.Logger == nil {
		p.cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log := p.cfg.Logger.With("topic", p.cfg.Topic)
	p.w = &kafka.Writer{
		Addr:                   kafka.TCP(p.cfg.Brokers...),
		Topic:                  p.cfg.Topic,
		Balancer:               &kafka.Murmur2Balancer{},
		RequiredAcks:           kafka.RequireAll,
		BatchSize:              p.cfg.BatchSize,
		BatchBytes:             4 << 20,
		BatchTimeout:           p.cfg.BatchTimeout,
		AllowAutoTopicCreation: true,
		Logger:                 kafkaLogger(log, slog.LevelDebug),
		ErrorLogger:            kafkaLogger(log, slog.LevelWarn),
	}
	return nil
}

// Publish validates signals (supplyplan.NormalizeSignal) and writes them, returning once Kafka has
// acknowledged all of them. An invalid signal fails the call before anything is written.
func (p *SignalProducer) Publish(ctx context.Context, signals []supplyplan.DemandSignal) error {
	msgs := make([]kafka.Message, len(signals))
	var buf []byte
	for i := range signals {
		s := signals[i]
		if err := supplyplan.NormalizeSignal(&s); err != nil {
			return fmt.Errorf("signal %d: %w", i, err)
		}
		start := len(buf)
		buf = AppendSignalJSON(buf, s)
		msgs[i] = kafka.Message{Key: []byte(s.OrganizationID), Value: buf[start:len(buf):len(buf)]}
	}
	return p.Write(ctx, msgs...)
}

// Write produces raw messages (tests use it for malformed input).
func (p *SignalProducer) Write(ctx context.Context, msgs ...kafka.Message) error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed || p.w == nil {
		return errors.New("signal producer: not open")
	}
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("produce demand signals: %w", err)
	}
	return nil
}

// Close flushes and closes the writer. It is idempotent.
func (p *SignalProducer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed || p.w == nil {
		p.closed = true
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- p.w.Close() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AppendSignalJSON appends s as the JSON object the consumer reads (the root package's field
// names; occurredAt in RFC 3339 with milliseconds). The quantity must be finite.
func AppendSignalJSON(dst []byte, s supplyplan.DemandSignal) []byte {
	dst = append(dst, `{"signalId":`...)
	dst = appendJSONString(dst, s.SignalID)
	dst = append(dst, `,"organizationId":`...)
	dst = appendJSONString(dst, s.OrganizationID)
	dst = append(dst, `,"skuId":`...)
	dst = appendJSONString(dst, s.SKU)
	dst = append(dst, `,"locationId":`...)
	dst = appendJSONString(dst, s.Location)
	dst = append(dst, `,"channel":`...)
	dst = appendJSONString(dst, s.Channel)
	dst = append(dst, `,"quantity":`...)
	dst = strconv.AppendFloat(dst, s.Quantity, 'g', -1, 64)
	dst = append(dst, `,"occurredAt":"`...)
	dst = s.OccurredAt.UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
	return append(dst, `"}`...)
}

// appendJSONString appends s quoted as a JSON string (invalid UTF-8 becomes U+FFFD, as
// encoding/json does).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
