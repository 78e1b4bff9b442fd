// Package redisstore is the Redis adapter. Only this package imports go-redis.
//
// gate.go: the alert cooldown and hysteresis state of the distributed mode (supplyplan.AlertGate),
// so that N nodes evaluating the same tenant send one alert. One hash per organization:
//
//	<prefix>alertgate:<orgId>   field: alert key (kind, product, location, channel, qualifier)
//	                            value: "<armed 0|1>:<last fired, unix ms>"
//
// Each evaluation and each manual trigger is one Lua script: atomic, whichever node runs it.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/supplyplan/supplyplan"
)

// Gate implements supplyplan.AlertGate on Redis.
type Gate struct {
	cfg Config
	rdb *redis.Client
}

// NewGate returns an unopened gate.
func NewGate(cfg Config) *Gate { return &Gate{cfg: cfg.withDefaults()} }

// Open creates the client and checks that Redis answers.
func (g *Gate) Open(ctx context.Context) error {
	g.rdb = g.cfg.client()
	if err := g.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis at %s: %w", g.cfg.Addr, err)
	}
	return nil
}

// Close closes the client (idempotent).
func (g *Gate) Close(context.Context) error {
	if g.rdb == nil {
		return nil
	}
	err := g.rdb.Close()
	g.rdb = nil
	return err
}

func (g *Gate) hash(scope string) string { return g.cfg.Prefix + "alertgate:" + scope }

// evaluateScript mirrors supplyplan.ApplyGate / GateStep. ARGV: now ms, cooldown ms, then pairs
// (key, "1" on | "2" hold). Returns the keys that fire.
var evaluateScript = redis.NewScript(`
local nowS = ARGV[1]
local now = tonumber(ARGV[1])
local cd = tonumber(ARGV[2])
local obs, order = {}, {}
for i = 3, #ARGV, 2 do
  obs[ARGV[i]] = ARGV[i + 1]
  order[#order + 1] = ARGV[i]
end
local all = redis.call('HGETALL', KEYS[1])
local entries = {}
for i = 1, #all, 2 do entries[all[i]] = all[i + 1] end
local function step(cur, st)
  if not cur then
    if st == '1' then return true, '0:' .. nowS end
    return false, nil
  end
  local armed = string.sub(cur, 1, 1) == '1'
  local lastS = string.sub(cur, 3)
  local cooled = now >= tonumber(lastS) + cd
  if not armed and st == 'o' then
    if cooled then return false, nil end
    return false, '1:' .. lastS
  elseif not armed then
    return false, cur
  elseif st == '1' and cooled then
    return true, '0:' .. nowS
  elseif cooled then
    return false, nil
  end
  return false, cur
end
local function store(k, cur, nxt)
  if nxt == cur then return end
  if nxt then redis.call('HSET', KEYS[1], k, nxt) else redis.call('HDEL', KEYS[1], k) end
end
local fired = {}
for _, k in ipairs(order) do
  local cur = entries[k]
  local f, nxt = step(cur, obs[k])
  if f then fired[#fired + 1] = k end
  store(k, cur, nxt)
end
for k, cur in pairs(entries) do
  if not obs[k] then
    local _, nxt = step(cur, 'o')
    store(k, cur, nxt)
  end
end
return fired
`)

// triggerScript mirrors supplyplan.GateTrigger. ARGV: key, now ms, cooldown ms, bypass "1"|"0".
// Returns {fired 1|0, retry-after ms}.
var triggerScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local now = tonumber(ARGV[2])
local cd = tonumber(ARGV[3])
if not cur then
  redis.call('HSET', KEYS[1], ARGV[1], '1:' .. ARGV[2])
  return {1, 0}
end
local armed = string.sub(cur, 1, 1)
local last = tonumber(string.sub(cur, 3))
if ARGV[4] ~= '1' and now < last + cd then
  return {0, last + cd - now}
end
redis.call('HSET', KEYS[1], ARGV[1], armed .. ':' .. ARGV[2])
return {1, 0}
`)

// Evaluate applies one full evaluation of scope atomically and returns the keys that fire.
func (g *Gate) Evaluate(ctx context.Context, scope string, obs []supplyplan.GateObservation, cooldown time.Duration, now time.Time) ([]string, error) {
	args := make([]any, 0, 2+2*len(obs))
	args = append(args, strconv.FormatInt(now.UnixMilli(), 10), strconv.FormatInt(cooldown.Milliseconds(), 10))
	for _, o := range obs {
		st := "2"
		if o.State == supplyplan.CondOn {
			st = "1"
		} else if o.State != supplyplan.CondHold {
			continue
		}
		args = append(args, o.Key, st)
	}
	res, err := evaluateScript.Run(ctx, g.rdb, []string{g.hash(scope)}, args...).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailableGate("evaluate alert gate", err)
	}
	return res, nil
}

// Trigger applies a manual trigger of key atomically.
func (g *Gate) Trigger(ctx context.Context, scope, key string, cooldown time.Duration, now time.Time, bypass bool) (bool, time.Duration, error) {
	b := "0"
	if bypass {
		b = "1"
	}
	res, err := triggerScript.Run(ctx, g.rdb, []string{g.hash(scope)}, key, strconv.FormatInt(now.UnixMilli(), 10),
		strconv.FormatInt(cooldown.Milliseconds(), 10), b).Int64Slice()
	if err != nil || len(res) != 2 {
		return false, 0, unavailableGate("trigger alert gate", err)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}

func unavailableGate(action string, err error) error {
	return fmt.Errorf("%s: %v: %w", action, err, &supplyplan.Error{Code: supplyplan.EUNAVAILABLE, Message: "Redis is unavailable"})
}

var _ supplyplan.AlertGate = (*Gate)(nil)
