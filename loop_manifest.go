package supplyplan

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A loop manifest is the JSON definition of a workflow: its states, the transitions between them
// (who may fire each, and the JSON Schema of its payload) and timeouts. docs/loops.md describes
// the format; ParseLoopManifest is its one validator, and every problem it reports is keyed by
// the path of the offending member (transitions[2].from[0]).

// LoopDomain is the planning area a loop belongs to.
type LoopDomain string

// Loop domains.
const (
	LoopDomainProcurement LoopDomain = "PROCUREMENT"
	LoopDomainOrders      LoopDomain = "ORDERS"
	LoopDomainReturns     LoopDomain = "RETURNS"
	LoopDomainQuality     LoopDomain = "QUALITY"
	LoopDomainCustom      LoopDomain = "CUSTOM"
)

// LoopDomains lists the domains.
var LoopDomains = []LoopDomain{LoopDomainProcurement, LoopDomainOrders, LoopDomainReturns, LoopDomainQuality, LoopDomainCustom}

// LoopRoleSystem is the role of the loop runtime itself (timeouts): a transition whose roles are
// only SYSTEM cannot be fired through the API.
const LoopRoleSystem = "SYSTEM"

// DefaultLoopRoles may fire a transition whose manifest omits roles.
var DefaultLoopRoles = []string{string(RoleAdmin), string(RoleManager), string(RolePlanner)}

// Manifest limits (docs/loops.md).
const (
	LoopManifestVersion       = 1
	MaxLoopManifestBytes      = 1 << 20
	MaxLoopDescription        = 2000
	MaxLoopTransitionDesc     = 500
	MaxLoopKeywords           = 20
	MaxLoopStates             = 100
	MaxLoopTransitions        = 200
	MaxLoopTimeouts           = 100
	MaxLoopTimeout            = 366 * 24 * time.Hour
	MaxLoopScopeLength        = 63
	MaxLoopShortNameLength    = 64
	maxLoopIdentifierLength   = 63
	maxLoopKeywordLength      = 50
	loopExtensionMemberPrefix = "x-"
)

var (
	loopIdentifierRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	loopKeywordRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,49}$`)
)

// ParseLoopName splits a full loop name "scope/name" and checks both parts: the scope is 1-63
// lowercase letters, digits or hyphens, not starting or ending with a hyphen (an organization
// slug, or "supplyplan"); the name is 1-64 lowercase letters, digits, hyphens or dots, starting
// and ending with a letter or digit, without "..".
func ParseLoopName(full string) (scope, name string, err error) {
	scope, name, ok := strings.Cut(full, "/")
	switch {
	case !ok:
		return "", "", fmt.Errorf("must be scope/name (e.g. acme/restock)")
	case !loopNamePart(scope, MaxLoopScopeLength, false):
		return "", "", fmt.Errorf("scope %q must be 1 to %d lowercase letters, digits or hyphens, not starting or ending with a hyphen", scope, MaxLoopScopeLength)
	case !loopNamePart(name, MaxLoopShortNameLength, true) || strings.Contains(name, ".."):
		return "", "", fmt.Errorf("name %q must be 1 to %d lowercase letters, digits, hyphens or dots, starting and ending with a letter or digit, without \"..\"", name, MaxLoopShortNameLength)
	}
	return scope, name, nil
}

// loopNamePart checks a scope (or, with dots, a short name): 1 to max lowercase letters, digits,
// hyphens (and dots), starting and ending with a letter or digit. A byte loop rather than a
// regular expression: every catalog request checks a name, twice.
func loopNamePart(s string, max int, dots bool) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
		case (c == '-' || dots && c == '.') && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// LoopManifest is a validated manifest.
type LoopManifest struct {
	ManifestVersion int              `json:"manifestVersion,omitempty"`
	Name            string           `json:"name"`
	Version         string           `json:"version"`
	Domain          LoopDomain       `json:"domain"`
	Description     string           `json:"description,omitempty"`
	Keywords        []string         `json:"keywords,omitempty"`
	States          []string         `json:"states"`
	Initial         string           `json:"initial"`
	Terminal        []string         `json:"terminal"`
	Transitions     []LoopTransition `json:"transitions"`
	Timeouts        []LoopTimeout    `json:"timeouts,omitempty"`

	semver SemVer
}

// LoopTransition moves an instance from one of From to To.
type LoopTransition struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	From        []string `json:"from"`
	To          string   `json:"to"`
	// Roles may fire the transition (DefaultLoopRoles when the manifest omits it).
	Roles []string `json:"roles"`
	// Input validates the transition's payload; nil accepts no payload but an empty object.
	Input *InputSchema `json:"-"`
}

// LoopTimeout fires Transition when an instance has stayed in State for After.
type LoopTimeout struct {
	State      string        `json:"state"`
	After      string        `json:"after"`
	Transition string        `json:"transition"`
	Duration   time.Duration `json:"-"`
}

// SemVer is the manifest's parsed version.
func (m *LoopManifest) SemVer() SemVer { return m.semver }

// IsTerminal reports whether state is terminal.
func (m *LoopManifest) IsTerminal(state string) bool { return slices.Contains(m.Terminal, state) }

// Transition returns the transition called name.
func (m *LoopManifest) Transition(name string) (*LoopTransition, bool) {
	for i := range m.Transitions {
		if m.Transitions[i].Name == name {
			return &m.Transitions[i], true
		}
	}
	return nil, false
}

// TimeoutOf returns the timeout of state, if any.
func (m *LoopManifest) TimeoutOf(state string) (LoopTimeout, bool) {
	for _, t := range m.Timeouts {
		if t.State == state {
			return t, true
		}
	}
	return LoopTimeout{}, false
}

// Allows reports whether role may fire the transition.
func (t *LoopTransition) Allows(role string) bool { return slices.Contains(t.Roles, role) }

// LeavesFrom reports whether the transition may fire from state.
func (t *LoopTransition) LeavesFrom(state string) bool { return slices.Contains(t.From, state) }

// ParseLoopManifest validates manifest bytes. A problem is a VALIDATION_ERROR (or
// PAYLOAD_TOO_LARGE above MaxLoopManifestBytes) whose details are keyed by manifest path.
func ParseLoopManifest(data []byte) (*LoopManifest, error) {
	if len(data) > MaxLoopManifestBytes {
		return nil, Errorf(ETOOLARGE, "A loop manifest is at most %d bytes (1 MiB)", MaxLoopManifestBytes)
	}
	v, err := decodeJSONValue(data)
	if err != nil {
		return nil, err
	}
	return parseLoopManifestValue(v)
}

func parseLoopManifestValue(v any) (*LoopManifest, error) {
	root, ok := v.(map[string]any)
	if !ok {
		return nil, Invalid("body", "must be a JSON object (a loop manifest)")
	}
	r := manifestReader{fe: FieldErrors{}}
	m := &LoopManifest{}
	r.members(root, "", []string{"manifestVersion", "name", "version", "domain", "description", "keywords",
		"states", "initial", "terminal", "transitions", "timeouts"})

	if mv, present := root["manifestVersion"]; present {
		if n, ok := schemaNumber(mv); !ok || n != LoopManifestVersion {
			r.fe.Add("manifestVersion", "must be %d (the only manifest format so far)", LoopManifestVersion)
		} else {
			m.ManifestVersion = LoopManifestVersion
		}
	}
	m.Name = r.str(root, "name", "name", true)
	if m.Name != "" {
		if _, _, err := ParseLoopName(m.Name); err != nil {
			r.fe.Add("name", "%v", err)
		}
	}
	m.Version = r.str(root, "version", "version", true)
	if m.Version != "" {
		sv, err := ParseSemVer(m.Version)
		if err != nil {
			r.fe.Add("version", "is not a semver 2.0 version: %v", err)
		}
		m.semver = sv
	}
	if d := r.str(root, "domain", "domain", true); d != "" {
		m.Domain = LoopDomain(d)
		if !slices.Contains(LoopDomains, m.Domain) {
			r.fe.Add("domain", "must be one of %s", joinLoopDomains())
		}
	}
	m.Description = r.str(root, "description", "description", false)
	if utf8.RuneCountInString(m.Description) > MaxLoopDescription {
		r.fe.Add("description", "must be at most %d characters", MaxLoopDescription)
	}
	m.Keywords = r.strList(root, "keywords", "keywords", false, MaxLoopKeywords)
	for i, k := range m.Keywords {
		if k != "" && !loopKeywordRe.MatchString(k) {
			r.fe.Add(fmt.Sprintf("keywords[%d]", i), "must be 1 to %d lowercase letters, digits or hyphens", maxLoopKeywordLength)
		}
	}

	// States.
	m.States = r.strList(root, "states", "states", true, MaxLoopStates)
	known := map[string]bool{}
	for i, s := range m.States {
		if s == "" {
			continue
		}
		if !loopIdentifierRe.MatchString(s) {
			r.fe.Add(fmt.Sprintf("states[%d]", i), "%q must be 1 to %d lowercase letters, digits or underscores, starting with a letter", s, maxLoopIdentifierLength)
		}
		known[s] = true
	}
	checkState := func(path, s string) bool {
		if !known[s] {
			r.fe.Add(path, "unknown state %q (states: %s)", s, strings.Join(m.States, ", "))
			return false
		}
		return true
	}
	m.Initial = r.str(root, "initial", "initial", true)
	if m.Initial != "" {
		checkState("initial", m.Initial)
	}
	m.Terminal = r.strList(root, "terminal", "terminal", true, MaxLoopStates)
	for i, s := range m.Terminal {
		if s != "" {
			checkState(fmt.Sprintf("terminal[%d]", i), s)
		}
	}
	if m.Initial != "" && slices.Contains(m.Terminal, m.Initial) {
		r.fe.Add("initial", "%q is terminal: an instance could never move", m.Initial)
	}

	// Transitions.
	tobjs := r.objects(root, "transitions", "transitions", true, MaxLoopTransitions)
	names := map[string]int{}
	for i, obj := range tobjs {
		p := fmt.Sprintf("transitions[%d]", i)
		at := func(k string) string { return p + "." + k }
		r.members(obj, p, []string{"name", "description", "from", "to", "roles", "input"})
		t := LoopTransition{}
		t.Name = r.str(obj, "name", at("name"), true)
		if t.Name != "" {
			if !loopIdentifierRe.MatchString(t.Name) {
				r.fe.Add(at("name"), "%q must be 1 to %d lowercase letters, digits or underscores, starting with a letter", t.Name, maxLoopIdentifierLength)
			} else if j, dup := names[t.Name]; dup {
				r.fe.Add(at("name"), "%q is also the name of transitions[%d]", t.Name, j)
			} else {
				names[t.Name] = i
			}
		}
		t.Description = r.str(obj, "description", at("description"), false)
		if utf8.RuneCountInString(t.Description) > MaxLoopTransitionDesc {
			r.fe.Add(at("description"), "must be at most %d characters", MaxLoopTransitionDesc)
		}
		t.From = r.strList(obj, "from", at("from"), true, MaxLoopStates)
		for j, s := range t.From {
			fp := fmt.Sprintf("%s[%d]", at("from"), j)
			if s != "" && checkState(fp, s) && slices.Contains(m.Terminal, s) {
				r.fe.Add(fp, "%q is terminal: no transition may leave a terminal state", s)
			}
		}
		t.To = r.str(obj, "to", at("to"), true)
		if t.To != "" {
			checkState(at("to"), t.To)
		}
		if _, present := obj["roles"]; present {
			t.Roles = r.strList(obj, "roles", at("roles"), true, len(Roles)+1)
			for j, role := range t.Roles {
				if role != "" && role != LoopRoleSystem && !Role(role).Valid() {
					r.fe.Add(fmt.Sprintf("%s[%d]", at("roles"), j), "unknown role %q (roles: %s, %s)", role, joinRoles(), LoopRoleSystem)
				}
			}
		} else {
			t.Roles = slices.Clone(DefaultLoopRoles)
		}
		if in, present := obj["input"]; present {
			t.Input = CompileInputSchema(in, at("input"), r.fe)
			if t.Input != nil && !t.Input.RootIsObject() {
				r.fe.Add(at("input"), `must be an object schema ("type": "object"): a transition's payload is a JSON object`)
			}
		}
		m.Transitions = append(m.Transitions, t)
	}

	// Timeouts.
	timed := map[string]int{}
	for i, obj := range r.objects(root, "timeouts", "timeouts", false, MaxLoopTimeouts) {
		p := fmt.Sprintf("timeouts[%d]", i)
		at := func(k string) string { return p + "." + k }
		r.members(obj, p, []string{"state", "after", "transition"})
		to := LoopTimeout{}
		to.State = r.str(obj, "state", at("state"), true)
		if to.State != "" && checkState(at("state"), to.State) {
			if slices.Contains(m.Terminal, to.State) {
				r.fe.Add(at("state"), "%q is terminal: nothing can time out there", to.State)
			} else if j, dup := timed[to.State]; dup {
				r.fe.Add(at("state"), "%q already has a timeout (timeouts[%d]); a state has at most one", to.State, j)
			} else {
				timed[to.State] = i
			}
		}
		to.After = r.str(obj, "after", at("after"), true)
		if to.After != "" {
			d, err := ParseLoopDuration(to.After)
			if err != nil {
				r.fe.Add(at("after"), "%v", err)
			}
			to.Duration = d
		}
		to.Transition = r.str(obj, "transition", at("transition"), true)
		if to.Transition != "" {
			if j, ok := names[to.Transition]; !ok {
				r.fe.Add(at("transition"), "unknown transition %q", to.Transition)
			} else if to.State != "" && !slices.Contains(m.Transitions[j].From, to.State) {
				r.fe.Add(at("transition"), "%q cannot fire from %q (its from: %s)", to.Transition, to.State, strings.Join(m.Transitions[j].From, ", "))
			}
		}
		m.Timeouts = append(m.Timeouts, to)
	}

	if len(r.fe) == 0 {
		m.checkGraph(r.fe)
	}
	if err := r.fe.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// checkGraph checks reachability on a manifest whose parts are otherwise valid: every state is
// reachable from the initial state, and every non-terminal state can still reach a terminal one
// (else an instance there is stuck forever).
func (m *LoopManifest) checkGraph(fe FieldErrors) {
	out := map[string][]string{}
	in := map[string][]string{}
	for _, t := range m.Transitions {
		for _, f := range t.From {
			out[f] = append(out[f], t.To)
			in[t.To] = append(in[t.To], f)
		}
	}
	walk := func(starts []string, next map[string][]string) map[string]bool {
		seen := map[string]bool{}
		queue := slices.Clone(starts)
		for _, s := range starts {
			seen[s] = true
		}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			for _, n := range next[s] {
				if !seen[n] {
					seen[n] = true
					queue = append(queue, n)
				}
			}
		}
		return seen
	}
	reachable := walk([]string{m.Initial}, out)
	finishing := walk(m.Terminal, in)
	for i, s := range m.States {
		terminal := m.IsTerminal(s)
		switch {
		case !reachable[s] && terminal:
			fe.Add(fmt.Sprintf("terminal[%d]", slices.Index(m.Terminal, s)), "terminal state %q is not reachable from the initial state %q", s, m.Initial)
		case !reachable[s]:
			fe.Add(fmt.Sprintf("states[%d]", i), "%q is not reachable from the initial state %q", s, m.Initial)
		case !terminal && !finishing[s]:
			fe.Add(fmt.Sprintf("states[%d]", i), "%q cannot reach a terminal state: an instance there would be stuck", s)
		}
	}
}

// ParseLoopDuration parses an ISO 8601 duration of weeks, days, hours, minutes and seconds
// (P2W, P3D, PT48H, P1DT12H, PT30M): whole numbers only, and no years or months, whose length
// depends on the calendar. It must be positive and at most MaxLoopTimeout.
func ParseLoopDuration(s string) (time.Duration, error) {
	m := loopDurationRe.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		datePart, _, _ := strings.Cut(s, "T")
		switch {
		case strings.HasPrefix(s, "P") && strings.ContainsAny(datePart, "YM"):
			return 0, fmt.Errorf("%q: years and months are not supported (their length depends on the calendar); use weeks or days", s)
		case strings.ContainsAny(s, ".,"):
			return 0, fmt.Errorf("%q: fractions are not supported; use a smaller unit", s)
		}
		return 0, fmt.Errorf("%q is not an ISO 8601 duration of weeks, days, hours, minutes or seconds (e.g. PT48H, P3D, P1DT12H)", s)
	}
	var total time.Duration
	for i, unit := range []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] != "" {
			n, _ := strconv.Atoi(m[i+1]) // at most 9 digits
			if time.Duration(n) > MaxLoopTimeout/unit {
				total = MaxLoopTimeout + 1 // and no overflow
				break
			}
			total += time.Duration(n) * unit
		}
	}
	if total <= 0 {
		return 0, fmt.Errorf("%q must be longer than zero", s)
	}
	if total > MaxLoopTimeout {
		return 0, fmt.Errorf("%q is longer than %d days", s, int(MaxLoopTimeout/(24*time.Hour)))
	}
	return total, nil
}

var loopDurationRe = regexp.MustCompile(`^P(?:(\d{1,9})W)?(?:(\d{1,9})D)?(?:T(?:(\d{1,9})H)?(?:(\d{1,9})M)?(?:(\d{1,9})S)?)?$`)

func joinLoopDomains() string {
	parts := make([]string, len(LoopDomains))
	for i, d := range LoopDomains {
		parts[i] = string(d)
	}
	return strings.Join(parts, ", ")
}

func joinRoles() string {
	parts := make([]string, len(Roles))
	for i, r := range Roles {
		parts[i] = string(r)
	}
	return strings.Join(parts, ", ")
}

// manifestReader reads typed members from decoded JSON objects, recording type errors by path.
type manifestReader struct{ fe FieldErrors }

// members refuses members outside known, except x- extensions.
func (r manifestReader) members(obj map[string]any, path string, known []string) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(known, k) || strings.HasPrefix(k, loopExtensionMemberPrefix) {
			continue
		}
		at := k
		if path != "" {
			at = path + "." + k
		}
		r.fe.Add(at, "unknown member (known: %s; extensions must start with %q)", strings.Join(known, ", "), loopExtensionMemberPrefix)
	}
}

func (r manifestReader) str(obj map[string]any, key, path string, required bool) string {
	v, present := obj[key]
	if !present || v == nil {
		if required {
			r.fe.Add(path, "is required")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.fe.Add(path, "must be a string")
		return ""
	}
	if required && s == "" {
		r.fe.Add(path, "must not be empty")
	}
	return s
}

// strList reads an array of strings, refusing duplicates (by position) and more than limit items.
func (r manifestReader) strList(obj map[string]any, key, path string, required bool, limit int) []string {
	v, present := obj[key]
	if !present || v == nil {
		if required {
			r.fe.Add(path, "is required")
		}
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		r.fe.Add(path, "must be an array of strings")
		return nil
	}
	if required && len(arr) == 0 {
		r.fe.Add(path, "must not be empty")
	}
	if len(arr) > limit {
		r.fe.Add(path, "must have at most %d items", limit)
		return nil
	}
	var out []string
	for i, e := range arr {
		s, ok := e.(string)
		at := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case !ok:
			r.fe.Add(at, "must be a string")
		case s == "":
			r.fe.Add(at, "must not be empty")
		case slices.Contains(out, s):
			r.fe.Add(at, "%q is listed twice", s)
		default:
			out = append(out, s)
			continue
		}
		out = append(out, "") // keep positions aligned with the input; "" marks an entry already refused
	}
	return out
}

func (r manifestReader) objects(obj map[string]any, key, path string, required bool, limit int) []map[string]any {
	v, present := obj[key]
	if !present || v == nil {
		if required {
			r.fe.Add(path, "is required")
		}
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		r.fe.Add(path, "must be an array of objects")
		return nil
	}
	if required && len(arr) == 0 {
		r.fe.Add(path, "must not be empty")
	}
	if len(arr) > limit {
		r.fe.Add(path, "must have at most %d items", limit)
		return nil
	}
	out := make([]map[string]any, 0, len(arr))
	for i, e := range arr {
		o, ok := e.(map[string]any)
		if !ok {
			r.fe.Add(fmt.Sprintf("%s[%d]", path, i), "must be an object")
			o = map[string]any{}
		}
		out = append(out, o)
	}
	return out
}
