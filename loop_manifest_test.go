package supplyplan

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// issueManifest is the example of issue 13.
const issueManifest = `{"name": "acme/restock", "version": "1.0.0", "domain": "PROCUREMENT", "description": "Restock approval",
 "states": ["draft", "submitted", "approved", "cancelled"], "initial": "draft",
 "terminal": ["approved", "cancelled"],
 "transitions": [{"name": "submit", "from": ["draft"], "to": "submitted", "roles": ["PLANNER", "ADMIN"],
                  "input": {"type": "object", "properties": {"note": {"type": "string"}}}},
                 {"name": "approve", "from": ["submitted"], "to": "approved"},
                 {"name": "cancel", "from": ["draft", "submitted"], "to": "cancelled"}],
 "timeouts": [{"state": "submitted", "after": "PT48H", "transition": "cancel"}]}`

// manifestWith decodes issueManifest, applies edit and encodes the result.
func manifestWith(t testing.TB, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(issueManifest), &m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func transition(m map[string]any, i int) map[string]any {
	return m["transitions"].([]any)[i].(map[string]any)
}

func TestParseLoopManifestIssueExample(t *testing.T) {
	m, err := ParseLoopManifest([]byte(issueManifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "acme/restock" || m.SemVer().Minor != 0 || m.Domain != LoopDomainProcurement || len(m.Transitions) != 3 {
		t.Errorf("manifest = %+v", m)
	}
	submit, ok := m.Transition("submit")
	if !ok || !submit.Allows("ADMIN") || submit.Allows("VIEWER") || submit.Input == nil || !submit.LeavesFrom("draft") {
		t.Errorf("submit = %+v", submit)
	}
	approve, _ := m.Transition("approve")
	if strings.Join(approve.Roles, ",") != "ADMIN,MANAGER,PLANNER" {
		t.Errorf("default roles = %v", approve.Roles)
	}
	if to, ok := m.TimeoutOf("submitted"); !ok || to.Duration != 48*time.Hour || to.Transition != "cancel" {
		t.Errorf("timeout = %+v", to)
	}
	if !m.IsTerminal("approved") || m.IsTerminal("draft") {
		t.Error("IsTerminal wrong")
	}
	if err := submit.Input.ValidatePayload([]byte(`{"note":5}`), "input"); err == nil || !strings.Contains(err.Error(), "input.note") {
		t.Errorf("payload validation: %v", err)
	}
}

func TestParseLoopManifestRules(t *testing.T) {
	tests := []struct {
		name string
		edit func(m map[string]any)
		path string
		msg  string
	}{
		{"name required", func(m map[string]any) { delete(m, "name") }, "name", "is required"},
		{"name without scope", func(m map[string]any) { m["name"] = "restock" }, "name", "scope/name"},
		{"name with capitals", func(m map[string]any) { m["name"] = "acme/Restock" }, "name", "lowercase"},
		{"name with ..", func(m map[string]any) { m["name"] = "acme/a..b" }, "name", `".."`},
		{"scope too long", func(m map[string]any) { m["name"] = strings.Repeat("a", 64) + "/x" }, "name", "scope"},
		{"version not semver", func(m map[string]any) { m["version"] = "1.0" }, "version", "semver"},
		{"version with v", func(m map[string]any) { m["version"] = "v1.0.0" }, "version", "semver"},
		{"version of the wrong type", func(m map[string]any) { m["version"] = 1 }, "version", "must be a string"},
		{"domain unknown", func(m map[string]any) { m["domain"] = "SALES" }, "domain", "PROCUREMENT, ORDERS, RETURNS, QUALITY, CUSTOM"},
		{"description too long", func(m map[string]any) { m["description"] = strings.Repeat("x", MaxLoopDescription+1) }, "description", "at most"},
		{"keyword invalid", func(m map[string]any) { m["keywords"] = []any{"ok", "Not OK"} }, "keywords[1]", "lowercase"},
		{"manifestVersion unknown", func(m map[string]any) { m["manifestVersion"] = 2 }, "manifestVersion", "must be 1"},
		{"unknown member", func(m map[string]any) { m["transitons"] = []any{} }, "transitons", "unknown member"},
		{"unknown transition member", func(m map[string]any) { transition(m, 1)["rolse"] = []any{"ADMIN"} }, "transitions[1].rolse", "unknown member"},
		{"states required", func(m map[string]any) { delete(m, "states") }, "states", "is required"},
		{"state name invalid", func(m map[string]any) {
			m["states"] = []any{"draft", "Sub mitted", "approved", "cancelled", "submitted"}
		}, "states[1]", "lowercase"},
		{"duplicate state", func(m map[string]any) {
			m["states"] = []any{"draft", "submitted", "approved", "cancelled", "draft"}
		}, "states[4]", "listed twice"},
		{"state not a string", func(m map[string]any) { m["states"] = []any{"draft", 1, "submitted", "approved", "cancelled"} }, "states[1]", "must be a string"},
		{"initial unknown", func(m map[string]any) { m["initial"] = "new" }, "initial", `unknown state "new"`},
		{"initial terminal", func(m map[string]any) { m["initial"] = "cancelled" }, "initial", "is terminal"},
		{"terminal unknown", func(m map[string]any) { m["terminal"] = []any{"approved", "rejected"} }, "terminal[1]", `unknown state "rejected"`},
		{"terminal duplicate", func(m map[string]any) { m["terminal"] = []any{"approved", "cancelled", "approved"} }, "terminal[2]", "listed twice"},
		{"transitions empty", func(m map[string]any) { m["transitions"] = []any{} }, "transitions", "must not be empty"},
		{"transition not an object", func(m map[string]any) { m["transitions"].([]any)[2] = "cancel" }, "transitions[2]", "must be an object"},
		{"from unknown state", func(m map[string]any) { transition(m, 2)["from"] = []any{"drafted", "submitted"} }, "transitions[2].from[0]", `unknown state "drafted"`},
		{"from a terminal state", func(m map[string]any) { transition(m, 2)["from"] = []any{"approved"} }, "transitions[2].from[0]", "no transition may leave a terminal state"},
		{"from twice", func(m map[string]any) { transition(m, 2)["from"] = []any{"draft", "draft"} }, "transitions[2].from[1]", "listed twice"},
		{"from missing", func(m map[string]any) { delete(transition(m, 1), "from") }, "transitions[1].from", "is required"},
		{"to unknown", func(m map[string]any) { transition(m, 1)["to"] = "done" }, "transitions[1].to", `unknown state "done"`},
		{"duplicate transition name", func(m map[string]any) { transition(m, 2)["name"] = "submit" }, "transitions[2].name", "also the name of transitions[0]"},
		{"transition name invalid", func(m map[string]any) { transition(m, 0)["name"] = "Submit!" }, "transitions[0].name", "lowercase"},
		{"unknown role", func(m map[string]any) { transition(m, 0)["roles"] = []any{"PLANNER", "OWNER"} }, "transitions[0].roles[1]", `unknown role "OWNER"`},
		{"role twice", func(m map[string]any) { transition(m, 0)["roles"] = []any{"ADMIN", "ADMIN"} }, "transitions[0].roles[1]", "listed twice"},
		{"roles empty", func(m map[string]any) { transition(m, 0)["roles"] = []any{} }, "transitions[0].roles", "must not be empty"},
		{"input not an object schema", func(m map[string]any) { transition(m, 0)["input"] = map[string]any{"type": "string"} }, "transitions[0].input", "object schema"},
		{"input schema invalid", func(m map[string]any) {
			transition(m, 0)["input"] = map[string]any{"type": "object", "properties": map[string]any{"qty": map[string]any{"type": "integer", "minimum": "1"}}}
		}, "transitions[0].input.properties.qty.minimum", "must be a number"},
		{"input schema keyword unsupported", func(m map[string]any) {
			transition(m, 0)["input"] = map[string]any{"type": "object", "if": map[string]any{}}
		}, "transitions[0].input.if", "unsupported keyword"},
		{"timeout state unknown", func(m map[string]any) { m["timeouts"].([]any)[0].(map[string]any)["state"] = "waiting" }, "timeouts[0].state", `unknown state "waiting"`},
		{"timeout on a terminal state", func(m map[string]any) {
			m["timeouts"].([]any)[0].(map[string]any)["state"] = "approved"
		}, "timeouts[0].state", "is terminal"},
		{"timeout transition unknown", func(m map[string]any) { m["timeouts"].([]any)[0].(map[string]any)["transition"] = "expire" }, "timeouts[0].transition", `unknown transition "expire"`},
		{"timeout transition not from the state", func(m map[string]any) {
			m["timeouts"].([]any)[0].(map[string]any)["transition"] = "approve"
			m["timeouts"].([]any)[0].(map[string]any)["state"] = "draft"
		}, "timeouts[0].transition", `"approve" cannot fire from "draft"`},
		{"timeout twice on a state", func(m map[string]any) {
			m["timeouts"] = append(m["timeouts"].([]any), map[string]any{"state": "submitted", "after": "P3D", "transition": "approve"})
		}, "timeouts[1].state", "already has a timeout"},
		{"timeout duration invalid", func(m map[string]any) { m["timeouts"].([]any)[0].(map[string]any)["after"] = "48h" }, "timeouts[0].after", "ISO 8601"},
		{"timeout in months", func(m map[string]any) { m["timeouts"].([]any)[0].(map[string]any)["after"] = "P1M" }, "timeouts[0].after", "months"},
		{"state unreachable", func(m map[string]any) {
			m["states"] = []any{"draft", "submitted", "approved", "cancelled", "archived"}
			m["transitions"] = append(m["transitions"].([]any), map[string]any{"name": "archive", "from": []any{"archived"}, "to": "cancelled"})
		}, "states[4]", "not reachable from the initial state"},
		{"terminal unreachable", func(m map[string]any) {
			m["states"] = []any{"draft", "submitted", "approved", "cancelled", "rejected"}
			m["terminal"] = []any{"approved", "cancelled", "rejected"}
		}, "terminal[2]", "terminal state \"rejected\" is not reachable"},
		{"state that cannot finish", func(m map[string]any) {
			m["states"] = []any{"draft", "submitted", "approved", "cancelled", "limbo"}
			m["transitions"] = append(m["transitions"].([]any), map[string]any{"name": "park", "from": []any{"draft"}, "to": "limbo"})
		}, "states[4]", "cannot reach a terminal state"},
		{"not an object", func(m map[string]any) {}, "body", "JSON object"},
	}
	for _, tt := range tests {
		data := manifestWith(t, tt.edit)
		if tt.name == "not an object" {
			data = []byte(`["a"]`)
		}
		_, err := ParseLoopManifest(data)
		e, ok := err.(*Error)
		if !ok || e.Code != EVALIDATION {
			t.Errorf("%s: got %v, want a validation error", tt.name, err)
			continue
		}
		if msgs := e.Details[tt.path]; !strings.Contains(strings.Join(msgs, "; "), tt.msg) {
			t.Errorf("%s: details %v, want %q at %s", tt.name, e.Details, tt.msg, tt.path)
		}
	}
}

func TestParseLoopManifestLimits(t *testing.T) {
	big := make([]byte, MaxLoopManifestBytes+1)
	if _, err := ParseLoopManifest(big); ErrorCode(err) != ETOOLARGE {
		t.Errorf("1 MiB + 1: %v", err)
	}
	if _, err := ParseLoopManifest([]byte(`{"name":"a/b","name":"a/c"}`)); ErrorCode(err) != EVALIDATION {
		t.Errorf("duplicate member: %v", err)
	}
	// Extensions are accepted anywhere a member may be.
	data := manifestWith(t, func(m map[string]any) {
		m["x-owner"] = "ops"
		transition(m, 0)["x-ui"] = map[string]any{"button": "Submit"}
	})
	if _, err := ParseLoopManifest(data); err != nil {
		t.Errorf("extensions: %v", err)
	}
}

func TestParseLoopDuration(t *testing.T) {
	good := map[string]time.Duration{
		"PT48H": 48 * time.Hour, "P3D": 72 * time.Hour, "P1DT12H": 36 * time.Hour, "PT30M": 30 * time.Minute,
		"PT45S": 45 * time.Second, "P2W": 14 * 24 * time.Hour, "P1W2D": 9 * 24 * time.Hour, "PT1H30M15S": time.Hour + 30*time.Minute + 15*time.Second,
		"P366D": MaxLoopTimeout,
	}
	for in, want := range good {
		if got, err := ParseLoopDuration(in); err != nil || got != want {
			t.Errorf("ParseLoopDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "P", "PT", "P1DT", "48H", "pt48h", "PT48", "P1Y", "P1M", "PT1.5H", "P0D", "PT0S",
		"P367D", "P999999999W", "P1H", "PT1D", "P1D1W", "PT1S1M", "P-1D", "P1234567890D"} {
		if got, err := ParseLoopDuration(in); err == nil {
			t.Errorf("ParseLoopDuration(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseLoopName(t *testing.T) {
	for _, in := range []string{"acme/restock", "supplyplan/procurement", "a/b", "acme-eu/restock.v2", "a1/x-1.y"} {
		if _, _, err := ParseLoopName(in); err != nil {
			t.Errorf("ParseLoopName(%q): %v", in, err)
		}
	}
	for _, in := range []string{"", "acme", "/x", "acme/", "acme/x/y", "Acme/x", "acme/.x", "acme/x.", "acme/-x",
		"-acme/x", "acme./x", "acme/x..y", "acme/x_y", "acme/" + strings.Repeat("a", 65), strings.Repeat("a", 64) + "/x"} {
		if _, _, err := ParseLoopName(in); err == nil {
			t.Errorf("ParseLoopName(%q) should fail", in)
		}
	}
}

// loopNamePart is the byte-loop form of the documented patterns; it must agree with them.
func TestLoopNamePartMatchesItsPatterns(t *testing.T) {
	scopeRe := regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)
	nameRe := regexp.MustCompile(`^[a-z0-9](?:[a-z0-9.-]{0,62}[a-z0-9])?$`)
	alphabet := []byte("az09-._A/ ")
	var inputs []string
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		inputs = append(inputs, string(prefix))
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(append(prefix[:len(prefix):len(prefix)], c), n-1)
		}
	}
	gen(nil, 4)
	for _, n := range []int{62, 63, 64, 65} {
		inputs = append(inputs, strings.Repeat("a", n), "a"+strings.Repeat("-", n-2)+"a", "a"+strings.Repeat(".", n-2)+"a")
	}
	for _, in := range inputs {
		if got, want := loopNamePart(in, MaxLoopScopeLength, false), scopeRe.MatchString(in); got != want {
			t.Errorf("scope %q: %v, pattern says %v", in, got, want)
		}
		if got, want := loopNamePart(in, MaxLoopShortNameLength, true), nameRe.MatchString(in); got != want {
			t.Errorf("name %q: %v, pattern says %v", in, got, want)
		}
	}
}
