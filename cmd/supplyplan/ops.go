package main

import (
	"context"
	"time"

	"github.com/supplyplan/supplyplan"
	sphttp "github.com/supplyplan/supplyplan/http"
	"github.com/supplyplan/supplyplan/redisstore"
)

// rateLimiter builds the REST API's rate limiter from the --rate-limit-* defaults and the plans'
// overrides; the buckets live in Redis when --redis-addr is set (shared by every node), else in
// this process. nil when every limit is off.
func (m *Main) rateLimiter(plans supplyplan.PlansConfig) (*sphttp.RateLimiter, error) {
	cfg := m.Config
	defaults := supplyplan.RateLimits{RPS: cfg.RateLimitRPS, Burst: cfg.RateLimitBurst, OrgRPS: cfg.RateLimitOrgRPS,
		OrgBurst: cfg.RateLimitOrgBurst, ImportRPS: cfg.RateLimitImportRPS, ImportBurst: cfg.RateLimitImportBurst}
	if err := defaults.Validate(); err != nil {
		return nil, err
	}
	byPlan := map[string]*supplyplan.RateLimits{}
	for name, p := range plans.Plans {
		byPlan[name] = p.RateLimits
	}
	rc := sphttp.RateLimiterConfig{Defaults: defaults, Plans: byPlan, Metrics: m.Metrics, Logger: m.Log}
	if cfg.RedisAddr != "" {
		s := redisstore.NewRateLimits(redisstore.Config{Addr: cfg.RedisAddr, Password: cfg.RedisPassword, Prefix: cfg.RedisPrefix, Logger: m.Log})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Open(ctx); err != nil {
			return nil, err
		}
		m.rateStore, rc.Store = s, s
	}
	return sphttp.NewRateLimiter(rc), nil
}
