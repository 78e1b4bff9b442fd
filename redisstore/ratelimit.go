package redisstore

// ratelimit.go: the REST API's token buckets in the distributed mode (supplyplan.RateLimitStore),
// so that every node draws from the same buckets. One hash per bucket:
//
//	<prefix>rl:<k|o>:<class>:<key or organization id>   fields t (tokens), ts (unix ms of t)
//
// expiring once the bucket would be full again. A request's buckets (its key's and its
// organization's) are one Lua script: atomic, whichever node runs it.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/supplyplan/supplyplan"
)

// RateLimits implements supplyplan.RateLimitStore on Redis.
type RateLimits struct {
	cfg Config
	rdb *redis.Client
}

// NewRateLimits returns an unopened store.
func NewRateLimits(cfg Config) *RateLimits { return &RateLimits{cfg: cfg.withDefaults()} }

// Open creates the client and checks that Redis answers.
func (s *RateLimits) Open(ctx context.Context) error {
	s.rdb = s.cfg.client()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis at %s: %w", s.cfg.Addr, err)
	}
	return nil
}

// Close closes the client (idempotent).
func (s *RateLimits) Close(context.Context) error {
	if s.rdb == nil {
		return nil
	}
	err := s.rdb.Close()
	s.rdb = nil
	return err
}

// takeScript mirrors supplyplan.TakeTokens. ARGV: now (unix ms), then per bucket rps and burst.
// Returns ok (1 or 0), then each bucket's tokens left as a string (replies truncate numbers).
var takeScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local n = #KEYS
local tokens, stamps = {}, {}
local ok = 1
for i = 1, n do
  local rps, burst = tonumber(ARGV[2*i]), tonumber(ARGV[2*i+1])
  local v = redis.call('HMGET', KEYS[i], 't', 'ts')
  local t, ts = tonumber(v[1]), tonumber(v[2])
  if t == nil or ts == nil then t, ts = burst, now end
  if now > ts then
    t = math.floor(math.min(burst, t + (now - ts) * rps / 1000) * 1e6 + 0.5) / 1e6
    ts = now
  end
  tokens[i], stamps[i] = t, ts
  if t < 1 then ok = 0 end
end
local out = {ok}
for i = 1, n do
  local rps, burst = tonumber(ARGV[2*i]), tonumber(ARGV[2*i+1])
  local t = tokens[i]
  if ok == 1 then t = math.floor((t - 1) * 1e6 + 0.5) / 1e6 end
  redis.call('HSET', KEYS[i], 't', string.format('%.6f', t), 'ts', string.format('%d', stamps[i]))
  redis.call('PEXPIRE', KEYS[i], math.ceil((burst - t) / rps * 1000) + 1000)
  out[#out + 1] = string.format('%.6f', t)
end
return out
`)

// TakeTokens takes one token from each bucket when every one has one, else none.
func (s *RateLimits) TakeTokens(ctx context.Context, buckets []supplyplan.RateBucket, now time.Time, out []supplyplan.RateTaken) (bool, error) {
	keys := make([]string, len(buckets))
	args := make([]any, 0, 1+2*len(buckets))
	args = append(args, strconv.FormatInt(now.UnixMilli(), 10))
	for i, b := range buckets {
		keys[i] = s.cfg.Prefix + b.Key
		args = append(args, strconv.FormatFloat(b.Limit.RPS, 'f', -1, 64), strconv.Itoa(b.Limit.Burst))
	}
	res, err := takeScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return false, fmt.Errorf("take rate limit tokens: %w", err)
	}
	if len(res) != 1+len(buckets) {
		return false, fmt.Errorf("take rate limit tokens: %d replies for %d buckets", len(res), len(buckets))
	}
	ok, _ := res[0].(int64)
	for i, b := range buckets {
		str, _ := res[1+i].(string)
		t, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return false, fmt.Errorf("take rate limit tokens: reply %q: %w", str, err)
		}
		out[i] = supplyplan.RateTakenOf(t, b.Limit)
	}
	return ok == 1, nil
}

var _ supplyplan.RateLimitStore = (*RateLimits)(nil)
