package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/supplyplan/supplyplan"
)

// The operator console's sessions (http.SessionStore), shared by every node: a session made on one
// node is good on all of them, and a sign-out or a revoked key ends it everywhere.
//
//	<prefix>console:session:<id>   hash: secret, importKey, csrf, created, expires (unix ms), idle (ms)
//
// The key's TTL is the idle time left, never past expires: Redis ends an unused session by itself.
// The hash holds the session's key secret (each request re-authenticates it): keep Redis private
// and behind its password.

func (s *Store) sessionKey(id string) string { return s.cfg.Prefix + "console:session:" + id }

// sessionTTL is how long a session used at now lives unused: its idle time, capped at its end.
func sessionTTL(expires time.Time, idle time.Duration, now time.Time) time.Duration {
	return min(idle, expires.Sub(now))
}

// PutSession stores a new session.
func (s *Store) PutSession(ctx context.Context, sess supplyplan.ConsoleSession) error {
	ttl := sessionTTL(sess.Expires, sess.Idle, sess.Created)
	if ttl <= 0 {
		return nil // already over
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		k := s.sessionKey(sess.ID)
		p.HSet(ctx, k, "secret", sess.Secret, "importKey", sess.ImportKey, "csrf", sess.CSRF,
			"created", sess.Created.UnixMilli(), "expires", sess.Expires.UnixMilli(), "idle", sess.Idle.Milliseconds())
		p.PExpire(ctx, k, ttl)
		return nil
	})
	if err != nil {
		return unavailable("store console session", err)
	}
	return nil
}

// touchScript reads a session and extends its TTL by its idle time, capped at its end; a session
// past its end is deleted. ARGV: now (unix ms). Returns the fields or nil.
var touchScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'secret', 'importKey', 'csrf', 'created', 'expires', 'idle')
if not v[1] then return false end
local now, expires, idle = tonumber(ARGV[1]), tonumber(v[5]), tonumber(v[6])
if not expires or not idle or now > expires then
  redis.call('DEL', KEYS[1])
  return false
end
local ttl = math.min(idle, expires - now)
if ttl <= 0 then ttl = 1 end
redis.call('PEXPIRE', KEYS[1], ttl)
return v
`)

// TouchSession returns the live session id and marks it used at now.
func (s *Store) TouchSession(ctx context.Context, id string, now time.Time) (supplyplan.ConsoleSession, bool, error) {
	res, err := touchScript.Run(ctx, s.rdb, []string{s.sessionKey(id)}, strconv.FormatInt(now.UnixMilli(), 10)).Slice()
	if err == redis.Nil {
		return supplyplan.ConsoleSession{}, false, nil
	}
	if err != nil {
		return supplyplan.ConsoleSession{}, false, unavailable("read console session", err)
	}
	str := func(i int) string {
		if i < len(res) {
			if v, ok := res[i].(string); ok {
				return v
			}
		}
		return ""
	}
	ms := func(i int) int64 {
		n, _ := strconv.ParseInt(str(i), 10, 64)
		return n
	}
	return supplyplan.ConsoleSession{ID: id, Secret: str(0), ImportKey: str(1), CSRF: str(2),
		Created: time.UnixMilli(ms(3)).UTC(), Expires: time.UnixMilli(ms(4)).UTC(), Idle: time.Duration(ms(5)) * time.Millisecond}, true, nil
}

// setImportKeyScript sets the import key of a session that still exists (HSET alone would revive
// a deleted one without a TTL).
var setImportKeyScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'importKey', ARGV[1]) end
return 1
`)

// SetSessionImportKey keeps an import key for the session's next uploads.
func (s *Store) SetSessionImportKey(ctx context.Context, id, key string) error {
	if err := setImportKeyScript.Run(ctx, s.rdb, []string{s.sessionKey(id)}, key).Err(); err != nil {
		return unavailable("update console session", err)
	}
	return nil
}

// DeleteSession revokes a session on every node.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if err := s.rdb.Del(ctx, s.sessionKey(id)).Err(); err != nil {
		return unavailable("delete console session", err)
	}
	return nil
}

// SessionCount counts the live sessions (a SCAN: operations and tests, not the request path).
func (s *Store) SessionCount(ctx context.Context) (int, error) {
	n := 0
	it := s.rdb.Scan(ctx, 0, s.sessionKey("*"), 1000).Iterator()
	for it.Next(ctx) {
		n++
	}
	if err := it.Err(); err != nil {
		return 0, unavailable("count console sessions", err)
	}
	return n, nil
}
