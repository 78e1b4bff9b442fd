// Package redisstore is the Redis adapter of the distributed mode: the registry's gateway keys and the
// console's sessions (every node reads the same ones), alert gates, rate limits. Only this package imports go-redis.
//
// Layout under the configured prefix (default "supplyplan:"):
//
//	<prefix>gwkeys            hash: key id -> APIKey JSON (every key, revoked ones too; for listing)
//	<prefix>gwkey:<sha256>    string: APIKey JSON of a live key (one GET per authentication)
//	<prefix>console:session:<id>  hash: an operator console session (sessions.go)
package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/supplyplan/supplyplan"
)

// Config configures a Redis client: the gateway key store (Store) and the alert gate (Gate) take
// the same configuration and build their client with Config.client.
type Config struct {
	Addr     string
	Password string
	DB       int
	Prefix   string // default "supplyplan:"
	// Timeout bounds dial, read and write (default 2 s).
	Timeout time.Duration
	// Logger receives go-redis's own messages (pool dial failures...) at debug level.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "supplyplan:"
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Second
	}
	return c
}

// client returns a client of c: one retry of a command that failed on the network (a Lua script
// of the gate is not idempotent: a retry after a lost reply would run it twice), no CLIENT
// SETINFO (older servers refuse it). go-redis logs through one process-wide logger: the first
// client with a Logger sets it.
func (c Config) client() *redis.Client {
	if c.Logger != nil {
		setLogger.Do(func() { redis.SetLogger(slogLogger{c.Logger}) })
	}
	return redis.NewClient(&redis.Options{Addr: c.Addr, Password: c.Password, DB: c.DB,
		DialTimeout: c.Timeout, ReadTimeout: c.Timeout, WriteTimeout: c.Timeout,
		MaxRetries: 1, DisableIdentity: true})
}

var setLogger sync.Once

// slogLogger adapts slog to go-redis's process-wide logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Printf(ctx context.Context, format string, v ...any) {
	s.l.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// Store is a Redis connection pool with the gateway key store on top.
type Store struct {
	cfg Config
	rdb *redis.Client
}

// New returns an unopened store.
func New(cfg Config) *Store { return &Store{cfg: cfg.withDefaults()} }

// Open creates the client. It does not fail when Redis is down: requests then answer 503 and
// /health names redis, until Redis is back.
func (s *Store) Open(ctx context.Context) error {
	s.rdb = s.cfg.client()
	return nil
}

// Close closes the client.
func (s *Store) Close(context.Context) error {
	if s.rdb == nil {
		return nil
	}
	err := s.rdb.Close()
	s.rdb = nil
	return err
}

// Ping checks that Redis answers (health check).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}

func (s *Store) listKey() string            { return s.cfg.Prefix + "gwkeys" }
func (s *Store) hashKey(hash string) string { return s.cfg.Prefix + "gwkey:" + hash }

// CreateGatewayKey stores a new key and returns it with its secret (shown once).
func (s *Store) CreateGatewayKey(ctx context.Context, in supplyplan.KeyNameInput) (supplyplan.APIKey, string, error) {
	now := supplyplan.Now()
	k, secret, _, err := supplyplan.NewPlatformState().CreateGatewayKey(in, now)
	if err != nil {
		return supplyplan.APIKey{}, "", err
	}
	b, err := json.Marshal(k)
	if err != nil {
		return supplyplan.APIKey{}, "", err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.listKey(), k.ID, b)
		p.Set(ctx, s.hashKey(k.Hash), b, 0)
		return nil
	})
	if err != nil {
		return supplyplan.APIKey{}, "", unavailable("store gateway key", err)
	}
	return k, secret, nil
}

// ListGatewayKeys returns every key, oldest first.
func (s *Store) ListGatewayKeys(ctx context.Context) ([]supplyplan.APIKey, error) {
	m, err := s.rdb.HGetAll(ctx, s.listKey()).Result()
	if err != nil {
		return nil, unavailable("list gateway keys", err)
	}
	st := supplyplan.NewPlatformState()
	for id, v := range m {
		var k supplyplan.APIKey
		if err := json.Unmarshal([]byte(v), &k); err != nil {
			return nil, fmt.Errorf("decode gateway key %s: %w", id, err)
		}
		st.GatewayKeys[id] = &k
	}
	return st.ListGatewayKeys(), nil
}

// RevokeGatewayKey marks a key revoked and removes its lookup entry.
func (s *Store) RevokeGatewayKey(ctx context.Context, id string) error {
	v, err := s.rdb.HGet(ctx, s.listKey(), id).Result()
	if errors.Is(err, redis.Nil) {
		return supplyplan.NotFound("Gateway key")
	}
	if err != nil {
		return unavailable("read gateway key", err)
	}
	var k supplyplan.APIKey
	if err := json.Unmarshal([]byte(v), &k); err != nil {
		return fmt.Errorf("decode gateway key %s: %w", id, err)
	}
	if k.RevokedAt != nil {
		return nil
	}
	now := supplyplan.Now()
	k.RevokedAt = &now
	b, _ := json.Marshal(k)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.listKey(), k.ID, b)
		p.Del(ctx, s.hashKey(k.Hash))
		return nil
	})
	if err != nil {
		return unavailable("revoke gateway key", err)
	}
	return nil
}

// AuthenticateGateway resolves a secret with one GET.
func (s *Store) AuthenticateGateway(ctx context.Context, secret string) (supplyplan.APIKey, bool, error) {
	v, err := s.rdb.Get(ctx, s.hashKey(supplyplan.HashKey(secret))).Bytes()
	if errors.Is(err, redis.Nil) {
		return supplyplan.APIKey{}, false, nil
	}
	if err != nil {
		return supplyplan.APIKey{}, false, unavailable("look up gateway key", err)
	}
	var k supplyplan.APIKey
	if err := json.Unmarshal(v, &k); err != nil {
		return supplyplan.APIKey{}, false, fmt.Errorf("decode gateway key: %w", err)
	}
	return k, k.RevokedAt == nil, nil
}

func unavailable(action string, err error) error {
	return fmt.Errorf("%s: %v: %w", action, err, &supplyplan.Error{Code: supplyplan.EUNAVAILABLE, Message: "Redis is unavailable"})
}

var _ supplyplan.GatewayKeyStore = (*Store)(nil)
