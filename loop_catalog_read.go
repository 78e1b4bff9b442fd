package supplyplan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Reading the loop catalog: resolution of ranges and tags, versions, blobs, documents, audit and
// listings.

// LoopResolution is the answer of resolve: the chosen version and what else satisfied the range.
type LoopResolution struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Digest    string `json:"digest"`
	Integrity string `json:"integrity"`
	// Deprecated is the chosen version's deprecation message (null when not deprecated).
	Deprecated *string `json:"deprecated"`
	// Candidates are the installable versions that satisfy the range, highest first (at most
	// MaxLoopCandidates).
	Candidates []string `json:"candidates"`
	// Range is the desugared range (">=1.2.0 <2.0.0-0"), or empty when a dist-tag was resolved.
	Range string `json:"range,omitempty"`
	Tag   string `json:"tag,omitempty"`
}

// LoopView is one loop as it stands: its record (dist-tags) and its versions in ascending
// precedence. It is immutable (a change of the loop makes a new one), so the catalog's actor hands
// it out in O(1) and resolution and rendering run on the caller's goroutine.
type LoopView struct {
	scope   string
	pkg     *LoopPackage
	entries []loopViewEntry

	// resolved memoizes Resolve's answers to ranges (loopRangeKey -> LoopResolution): the view
	// never changes, and clients resolve the same few ranges over and over (the scan and its
	// range tests were a quarter of a resolve's CPU for a loop of 100 versions). At most
	// maxResolvedPerView answers are kept per view; others are computed each time.
	resolved  sync.Map
	nResolved atomic.Int32
}

// maxResolvedPerView bounds LoopView.resolved: a view is kept until its loop changes, for every
// loop read, and an answer holds up to MaxLoopCandidates version strings (shared with the state).
const maxResolvedPerView = 8

// loopViewEntry is a version in a view, with what resolution tests of it (copied so that the scan
// reads one slice rather than every version's record).
type loopViewEntry struct {
	sv          SemVer
	v           *LoopVersion
	installable bool
	deprecated  bool
}

// View returns the view of name, built once per change of the loop. Stored packages and versions
// are never modified in place (a change stores new values), so the view may share them.
func (s *LoopCatalogState) View(name string) (*LoopView, error) {
	p, err := s.pkg(name)
	if err != nil {
		return nil, err
	}
	if v, ok := s.views[name]; ok {
		return v, nil
	}
	list := s.byName[name]
	view := &LoopView{scope: s.Scope, pkg: p, entries: make([]loopViewEntry, len(list))}
	for i, e := range list {
		v := s.Versions[e.key]
		view.entries[i] = loopViewEntry{sv: e.sv, v: v, installable: v.installable(), deprecated: v.Deprecated != nil}
	}
	s.views[name] = view
	return view, nil
}

// Resolve picks a version of name for spec: a dist-tag of the loop, or a node-semver range (an
// empty spec is the latest tag, or "*" while there is none). A range chooses the highest
// installable (not yanked, not removed) satisfying version that is not deprecated, or the highest
// deprecated one when nothing else satisfies it (with its message). Pre-releases satisfy only as
// ParseSemVerRange's includePrerelease rule allows.
func (s *LoopCatalogState) Resolve(name, spec string, includePrerelease bool) (LoopResolution, error) {
	view, err := s.View(name)
	if err != nil {
		return LoopResolution{}, err
	}
	return view.Resolve(spec, includePrerelease)
}

// version finds the stored version whose precedence is sv's (build metadata does not count).
func (l *LoopView) version(sv SemVer) *LoopVersion {
	i, found := slices.BinarySearchFunc(l.entries, sv, func(e loopViewEntry, t SemVer) int { return e.sv.Compare(t) })
	if !found {
		return nil
	}
	return l.entries[i].v
}

// Resolve is LoopCatalogState.Resolve on the view. The answer's Candidates may be shared with
// other callers: they must not modify it.
func (l *LoopView) Resolve(spec string, includePrerelease bool) (LoopResolution, error) {
	name, p := l.pkg.Name, l.pkg
	spec = strings.TrimSpace(spec)
	if spec == "" {
		spec = "*"
		if _, ok := p.DistTags[LatestTag]; ok {
			spec = LatestTag
		}
	}
	// A memoized answer is one this view gave to a range that is neither one of its dist-tags nor
	// a tag name (the checks below), which the view's immutable tags keep true: it is looked up
	// first, before the tag name's check builds its error.
	key := loopRangeKey{spec, includePrerelease}
	if res, ok := l.resolved.Load(key); ok {
		return res.(LoopResolution), nil
	}
	if tagged, ok := p.DistTags[spec]; ok {
		v := l.version(mustSemVer(tagged))
		if v == nil || !v.installable() {
			return LoopResolution{}, &Error{Code: ENOTFOUND, Message: fmt.Sprintf("Dist-tag %s of %s points at %s, which is yanked or removed", spec, name, tagged)}
		}
		return LoopResolution{Name: name, Version: v.Version, Digest: v.Digest, Integrity: v.Integrity,
			Deprecated: v.Deprecated, Candidates: []string{v.Version}, Tag: spec}, nil
	}
	if ValidateLoopTag(spec) == nil {
		return LoopResolution{}, &Error{Code: ENOTFOUND, Message: fmt.Sprintf("%s has no dist-tag %s", name, spec)}
	}
	res, err := l.resolveRange(spec, includePrerelease)
	if err == nil {
		// A slot is taken before the answer is stored, so that racing resolutions of new ranges
		// never store more than the bound.
		if n := l.nResolved.Add(1); n > maxResolvedPerView {
			l.nResolved.Add(-1)
		} else if _, loaded := l.resolved.LoadOrStore(key, res); loaded {
			l.nResolved.Add(-1)
		}
	}
	return res, err
}

// resolveRange resolves spec as a semver range (Resolve, without the memo).
func (l *LoopView) resolveRange(spec string, includePrerelease bool) (LoopResolution, error) {
	name := l.pkg.Name
	r, err := parseRangeCached(spec, includePrerelease)
	if err != nil {
		return LoopResolution{}, Invalid("range", "is neither a dist-tag of %s nor a valid semver range: %v", name, err)
	}
	res := LoopResolution{Name: name, Range: r.String()}
	var chosen, fallback *LoopVersion
	list := l.entries
	// Scan, highest first, only the versions between the range's bounds.
	start, stop := len(list)-1, 0
	lo, loOK, hi, hiOK := r.Bounds()
	if hiOK {
		i, found := slices.BinarySearchFunc(list, hi, func(e loopViewEntry, t SemVer) int { return e.sv.Compare(t) })
		if !found {
			i--
		}
		start = i
	}
	if loOK {
		stop, _ = slices.BinarySearchFunc(list, lo, func(e loopViewEntry, t SemVer) int { return e.sv.Compare(t) })
	}
	res.Candidates = make([]string, 0, min(max(start-stop+1, 0), MaxLoopCandidates))
	for i := start; i >= stop; i-- {
		e := &list[i]
		if !e.installable || !r.Contains(e.sv) {
			continue
		}
		v := e.v
		if len(res.Candidates) < MaxLoopCandidates {
			res.Candidates = append(res.Candidates, v.Version)
		}
		if fallback == nil {
			fallback = v
		}
		if chosen == nil && !e.deprecated {
			chosen = v
		}
		if chosen != nil && len(res.Candidates) >= MaxLoopCandidates {
			break
		}
	}
	if chosen == nil {
		chosen = fallback
	}
	if chosen == nil {
		return LoopResolution{}, &Error{Code: ENOTFOUND, Message: fmt.Sprintf("No version of %s satisfies %s", name, spec),
			Details: map[string][]string{"range": {"no installable version satisfies " + res.Range}}}
	}
	res.Version, res.Digest, res.Integrity, res.Deprecated = chosen.Version, chosen.Digest, chosen.Integrity, chosen.Deprecated
	return res, nil
}

// loopRanges memoizes parsed ranges: resolution parses the same few ranges over and over, and
// a parsed SemVerRange is never modified. Bounded: emptied when it reaches maxLoopRanges.
var loopRanges struct {
	sync.Mutex
	m map[loopRangeKey]SemVerRange
}

type loopRangeKey struct {
	spec string
	pre  bool
}

const maxLoopRanges = 1024

// parseRangeCached is ParseSemVerRange through loopRanges.
func parseRangeCached(spec string, includePrerelease bool) (SemVerRange, error) {
	k := loopRangeKey{spec, includePrerelease}
	loopRanges.Lock()
	r, ok := loopRanges.m[k]
	loopRanges.Unlock()
	if ok {
		return r, nil
	}
	r, err := ParseSemVerRange(spec, includePrerelease)
	if err != nil {
		return r, err
	}
	loopRanges.Lock()
	if loopRanges.m == nil || len(loopRanges.m) >= maxLoopRanges {
		loopRanges.m = make(map[loopRangeKey]SemVerRange, 64)
	}
	loopRanges.m[k] = r
	loopRanges.Unlock()
	return r, nil
}

// DistTags returns a copy of the loop's dist-tags.
func (l *LoopView) DistTags() map[string]string { return maps.Clone(l.pkg.DistTags) }

// Version returns name@version, also a yanked one (exact fetches always work); a removed one is
// not found.
func (s *LoopCatalogState) Version(name, version string) (LoopVersion, error) {
	v, err := s.lookup(name, version, false)
	if err != nil {
		return LoopVersion{}, err
	}
	return *cloneVersion(v), nil
}

// Blob returns the canonical manifest of digest, if this scope holds it.
func (s *LoopCatalogState) Blob(digest string) ([]byte, bool) {
	s.ensureIndex()
	b, ok := s.Blobs[digest]
	if !ok {
		return nil, false
	}
	return b.Data, true
}

// Manifest returns the parsed manifest of a stored digest (what the loop runtime binds instances to).
func (s *LoopCatalogState) Manifest(digest string) (*LoopManifest, error) {
	b, ok := s.Blob(digest)
	if !ok {
		return nil, NotFound("Loop manifest")
	}
	return ParseLoopManifest(b)
}

// LoopDocument is a loop with all its versions (npm's packument).
type LoopDocument struct {
	Name     string            `json:"name"`
	Scope    string            `json:"scope"`
	DistTags map[string]string `json:"distTags"`
	// Versions are newest first, removed ones included (state REMOVED) since their numbers stay taken.
	Versions  []LoopVersion `json:"versions"`
	CreatedAt time.Time     `json:"createdAt"`
	UpdatedAt time.Time     `json:"updatedAt"`
}

// Loop returns the document of name.
func (s *LoopCatalogState) Loop(name string) (LoopDocument, error) {
	view, err := s.View(name)
	if err != nil {
		return LoopDocument{}, err
	}
	return view.Document(), nil
}

// Document is the loop's document (versions newest first).
func (l *LoopView) Document() LoopDocument {
	p := l.pkg
	doc := LoopDocument{Name: p.Name, Scope: l.scope, DistTags: maps.Clone(p.DistTags), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	for i := len(l.entries) - 1; i >= 0; i-- {
		doc.Versions = append(doc.Versions, *cloneVersion(l.entries[i].v))
	}
	return doc
}

// LoopAudit returns a loop's audit entries, newest first.
func (s *LoopCatalogState) LoopAudit(name string, limit, offset int) (Page[LoopAuditEntry], error) {
	p, err := s.pkg(name)
	if err != nil {
		return Page[LoopAuditEntry]{}, err
	}
	if err := checkLoopPage(limit, offset); err != nil {
		return Page[LoopAuditEntry]{}, err
	}
	all := make([]LoopAuditEntry, 0, p.AuditNext-p.AuditFirst)
	for seq := p.AuditNext - 1; seq >= p.AuditFirst; seq-- {
		if e, ok := s.Audit[loopAuditID(name, seq)]; ok {
			all = append(all, *e)
		}
	}
	return page(all, limit, offset), nil
}

// LoopFilter selects loops: Domain exactly, Query a case-insensitive substring of the name,
// description or a keyword.
type LoopFilter struct {
	Domain string
	Query  string
	Limit  int
	Offset int
}

// Validate checks the filter's values.
func (f LoopFilter) Validate() error {
	if f.Domain != "" && !slices.Contains(LoopDomains, LoopDomain(f.Domain)) {
		return Invalid("domain", "must be one of %s", joinLoopDomains())
	}
	return checkLoopPage(f.Limit, f.Offset)
}

func checkLoopPage(limit, offset int) error {
	fe := FieldErrors{}
	if limit < 0 || limit > MaxPageLimit {
		fe.Add("limit", "must be between 1 and %d", MaxPageLimit)
	}
	if offset < 0 {
		fe.Add("offset", "must not be negative")
	}
	return fe.Err()
}

// LoopSummary is a loop in a listing, described by its `latest` version (or its highest
// installable one when latest is unset).
type LoopSummary struct {
	Name        string            `json:"name"`
	Scope       string            `json:"scope"`
	Domain      LoopDomain        `json:"domain"`
	Description string            `json:"description,omitempty"`
	Keywords    []string          `json:"keywords,omitempty"`
	Latest      string            `json:"latest,omitempty"`
	DistTags    map[string]string `json:"distTags"`
	Versions    int               `json:"versions"`
	Deprecated  bool              `json:"deprecated"`
	UpdatedAt   time.Time         `json:"updatedAt"`
}

// LoopSummaries returns the loops of this scope that match f (unpaginated, by name); loops
// whose every version was removed are left out.
func (s *LoopCatalogState) LoopSummaries(f LoopFilter) []LoopSummary {
	s.ensureIndex()
	q := strings.ToLower(strings.TrimSpace(f.Query))
	out := []LoopSummary{}
	for name, p := range s.Packages {
		var shown *LoopVersion
		count := 0
		list := s.byName[name]
		for i := len(list) - 1; i >= 0; i-- {
			v := s.Versions[list[i].key]
			if v.RemovedAt != nil {
				continue
			}
			count++
			if shown == nil && v.installable() {
				shown = v
			}
		}
		if latest, ok := p.DistTags[LatestTag]; ok {
			if v := s.Versions[loopVersionID(name, mustSemVer(latest))]; v != nil && v.RemovedAt == nil {
				shown = v
			}
		}
		if shown == nil {
			for i := len(list) - 1; i >= 0 && shown == nil; i-- {
				if v := s.Versions[list[i].key]; v.RemovedAt == nil {
					shown = v // only yanked versions left
				}
			}
		}
		if shown == nil {
			continue
		}
		if f.Domain != "" && string(shown.Domain) != f.Domain {
			continue
		}
		if q != "" && !strings.Contains(name, q) && !strings.Contains(strings.ToLower(shown.Description), q) &&
			!slices.ContainsFunc(shown.Keywords, func(k string) bool { return strings.Contains(k, q) }) {
			continue
		}
		out = append(out, LoopSummary{Name: name, Scope: s.Scope, Domain: shown.Domain, Description: shown.Description,
			Keywords: slices.Clone(shown.Keywords), Latest: p.DistTags[LatestTag], DistTags: maps.Clone(p.DistTags),
			Versions: count, Deprecated: shown.Deprecated != nil, UpdatedAt: p.UpdatedAt})
	}
	slices.SortFunc(out, func(a, b LoopSummary) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// PageLoopSummaries merges the listings of several scopes (an organization's and the global
// one) by name and cuts the page f asks for.
func PageLoopSummaries(f LoopFilter, lists ...[]LoopSummary) Page[LoopSummary] {
	var all []LoopSummary
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.SortFunc(all, func(a, b LoopSummary) int { return cmp.Compare(a.Name, b.Name) })
	return page(all, f.Limit, f.Offset)
}
