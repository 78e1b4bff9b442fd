package http

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/openapitest"
)

// keyAuth knows two keys: the platform key and an ADMIN key of org-1.
type keyAuth struct{}

const (
	testPlatformKey = "sp_platform_abc123"
	testAdminKey    = "sp_admin_abc123"
)

func (keyAuth) Authenticate(secret string) (supplyplan.Principal, bool) {
	switch secret {
	case testPlatformKey:
		return supplyplan.Principal{KeyID: "p", Platform: true}, true
	case testAdminKey:
		return supplyplan.Principal{KeyID: "a", OrgID: "org-1", Role: supplyplan.RoleAdmin}, true
	}
	return supplyplan.Principal{}, false
}

func (keyAuth) Organization(id string) (supplyplan.Organization, bool) {
	return supplyplan.Organization{ID: id}, id == "org-1"
}

func TestReady(t *testing.T) {
	redisDown := errors.New("dial tcp 10.0.0.7:6379: connect: connection refused")
	var failing bool
	s := NewServer(Config{}, Services{Auth: keyAuth{}, Readiness: map[string]func(context.Context) error{
		"journal": func(context.Context) error { return nil },
		"redis": func(context.Context) error {
			if failing {
				return redisDown
			}
			return nil
		},
	}})
	doc, err := openapitest.Parse(apiOpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	get := func(key string) (int, string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/ready")
		ctx.Request.Header.SetMethod("GET")
		if key != "" {
			ctx.Request.Header.Set("Authorization", "Bearer "+key)
		}
		s.Handler()(&ctx)
		if err := doc.ValidateResponse("GET", "/ready", ctx.Response.StatusCode(), string(ctx.Response.Header.ContentType()), ctx.Response.Body()); err != nil {
			t.Error(err)
		}
		return ctx.Response.StatusCode(), string(ctx.Response.Body())
	}
	if code, body := get(""); code != 200 || body != `{"status":"ready"}` {
		t.Errorf("ready, no key: %d %s", code, body)
	}
	failing = true
	for _, key := range []string{"", testAdminKey, "sp_platform_wrong", "garbage"} {
		if code, body := get(key); code != 503 || body != `{"status":"unavailable"}` {
			t.Errorf("unavailable, key %q: %d %s (details only for the platform key)", key, code, body)
		}
	}
	code, body := get(testPlatformKey)
	var got readyBody
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if code != 503 || got.Status != "unavailable" || !got.Checks["journal"].OK || got.Checks["redis"].OK ||
		got.Checks["redis"].Error != redisDown.Error() || len(got.Checks) != 2 {
		t.Errorf("platform key: %d %s", code, body)
	}
}

// TestRunReadinessDeadline checks that a check that hangs fails at its deadline, concurrently with
// the others.
func TestRunReadinessDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	start := time.Now()
	got := runReadiness(ctx, map[string]func(context.Context) error{"a": hang, "b": hang, "c": func(context.Context) error { return nil }})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %s", took)
	}
	if got["a"].OK || got["b"].OK || !got["c"].OK || got["a"].Error == "" {
		t.Errorf("checks = %+v", got)
	}
}
