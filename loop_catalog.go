package supplyplan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The loop catalog's state: published loop versions (immutable once published), their canonical
// manifests by digest, dist-tags with an audit trail, deprecations, yanks and removals. One
// LoopCatalogState holds one scope: an organization's private loops (scope = its slug) or the
// global loops (scope "supplyplan"); a name of another scope is never found in it. Like the other
// states it changes only through Apply, and its methods return the records of a change without
// applying them. It is owned by one actor: not safe for concurrent use.

// Record kinds of the loop catalog.
const (
	KindLoop        = "loop"      // LoopPackage by full name
	KindLoopVersion = "loopver"   // LoopVersion by name@version (the version without build metadata)
	KindLoopBlob    = "loopblob"  // LoopBlob by digest
	KindLoopAudit   = "loopaudit" // LoopAuditEntry by name#seq
)

func init() {
	RegisterKind(KindLoop, func() any { return new(LoopPackage) })
	RegisterKind(KindLoopVersion, func() any { return new(LoopVersion) })
	RegisterKind(KindLoopBlob, func() any { return new(LoopBlob) })
	RegisterKind(KindLoopAudit, func() any { return new(LoopAuditEntry) })
}

// Error codes of the loop catalog (both 409).
const (
	EVERSIONEXISTS  = "VERSION_EXISTS"
	EBREAKINGCHANGE = "BREAKING_CHANGE"
)

// GlobalLoopScope is the scope of the loops every organization sees (the built-in ones and those
// the platform key publishes).
const GlobalLoopScope = "supplyplan"

// Catalog limits (docs/loops.md).
const (
	LoopDeleteWindow       = 72 * time.Hour
	MaxLoopsPerScope       = 10000
	MaxLoopVersions        = 10000 // per loop
	MaxLoopScopeBytes      = 256 << 20
	MaxLoopDistTags        = 100 // per loop
	MaxLoopTagLength       = 64
	MaxLoopMessage         = 1024 // deprecation message, yank reason
	MaxLoopAuditEntries    = 1000 // kept per loop; older entries are dropped
	MaxLoopCandidates      = 100  // versions listed by resolve
	LatestTag              = "latest"
	loopAuditIDSeparator   = "#"
	loopVersionIDSeparator = "@"
)

// LoopVersionState is the lifecycle state of a version, derived from its flags: REMOVED over
// YANKED over DEPRECATED over PUBLISHED.
type LoopVersionState string

// Version states.
const (
	LoopPublished  LoopVersionState = "PUBLISHED"
	LoopDeprecated LoopVersionState = "DEPRECATED"
	LoopYanked     LoopVersionState = "YANKED"
	LoopRemoved    LoopVersionState = "REMOVED"
)

// LoopVersion is one published version. Its dist (digest, integrity, signatures) never changes;
// only the lifecycle fields do.
type LoopVersion struct {
	LoopDist
	Domain      LoopDomain       `json:"domain"`
	Description string           `json:"description,omitempty"`
	Keywords    []string         `json:"keywords,omitempty"`
	Size        int              `json:"size"`
	Prerelease  bool             `json:"prerelease"`
	State       LoopVersionState `json:"state"`
	// Deprecated is the deprecation message; nil when not deprecated.
	Deprecated   *string    `json:"deprecated,omitempty"`
	DeprecatedAt *time.Time `json:"deprecatedAt,omitempty"`
	Yanked       bool       `json:"yanked"`
	YankReason   string     `json:"yankReason,omitempty"`
	YankedAt     *time.Time `json:"yankedAt,omitempty"`
	RemovedAt    *time.Time `json:"removedAt,omitempty"`
	PublishedAt  time.Time  `json:"publishedAt"`
	Publisher    string     `json:"publisher"`
}

func (v *LoopVersion) setState() {
	switch {
	case v.RemovedAt != nil:
		v.State = LoopRemoved
	case v.Yanked:
		v.State = LoopYanked
	case v.Deprecated != nil:
		v.State = LoopDeprecated
	default:
		v.State = LoopPublished
	}
}

// installable reports whether ranges and tags may choose the version.
func (v *LoopVersion) installable() bool { return v.RemovedAt == nil && !v.Yanked }

// LoopPackage is the per-name record: dist-tags and the audit sequence.
type LoopPackage struct {
	Name      string            `json:"name"`
	DistTags  map[string]string `json:"distTags"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
	// AuditNext is the sequence number of the next audit entry; AuditFirst the oldest one kept.
	AuditNext  int64 `json:"auditNext"`
	AuditFirst int64 `json:"auditFirst"`
}

// LoopBlob is a canonical manifest, stored by its digest.
type LoopBlob struct {
	Digest string `json:"digest"`
	Data   []byte `json:"data"`
}

// Audit actions.
const (
	LoopActionPublish     = "publish"
	LoopActionTagSet      = "dist-tag.set"
	LoopActionTagRemove   = "dist-tag.remove"
	LoopActionDeprecate   = "deprecate"
	LoopActionUndeprecate = "undeprecate"
	LoopActionYank        = "yank"
	LoopActionUnyank      = "unyank"
	LoopActionRemove      = "remove"
)

// loopAutomaticActorNote marks the audit entries of tag moves a change caused (latest moving on
// publish, yank or removal): the actor is the one whose change caused it.
const loopAutomaticActorNote = " (automatic)"

// LoopAuditEntry records one change of a loop: who did what, when. Dist-tag changes carry the
// tag and its previous version (From).
type LoopAuditEntry struct {
	Seq     int64     `json:"seq"`
	Name    string    `json:"name"`
	Action  string    `json:"action"`
	Version string    `json:"version,omitempty"`
	Tag     string    `json:"tag,omitempty"`
	From    string    `json:"from,omitempty"`
	Message string    `json:"message,omitempty"`
	Actor   string    `json:"actor"`
	At      time.Time `json:"at"`
}

// LoopCatalogState is one scope's catalog.
type LoopCatalogState struct {
	Scope    string                     `json:"scope"`
	Packages map[string]*LoopPackage    `json:"packages"`
	Versions map[string]*LoopVersion    `json:"versions"`
	Blobs    map[string]*LoopBlob       `json:"blobs"`
	Audit    map[string]*LoopAuditEntry `json:"audit"`

	// Derived, rebuilt on first use after a snapshot load: each name's versions in ascending
	// precedence, and the bytes of all blobs; shapes caches the states and transitions of the
	// blobs the compatibility check read (so a publish does not decode its predecessor again).
	byName    map[string][]loopIndexEntry
	blobBytes int
	shapes    map[string]loopShape
	// views caches each read loop's immutable LoopView until the loop changes.
	views map[string]*LoopView
}

type loopIndexEntry struct {
	key string
	sv  SemVer
}

// NewLoopCatalogState returns the empty catalog of scope.
func NewLoopCatalogState(scope string) *LoopCatalogState {
	s := &LoopCatalogState{Scope: scope}
	s.ensureIndex()
	return s
}

// UnmarshalJSON loads a snapshot: the stored maps replace the state's, and the derived index is
// dropped so that it is rebuilt from them on first use (a snapshot may be loaded into a state
// whose index was already built, as an actor's journal load does).
func (s *LoopCatalogState) UnmarshalJSON(data []byte) error {
	type stored LoopCatalogState // the same fields without this method
	var v stored
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if v.Scope == "" {
		v.Scope = s.Scope
	}
	*s = LoopCatalogState{Scope: v.Scope, Packages: v.Packages, Versions: v.Versions, Blobs: v.Blobs, Audit: v.Audit}
	return nil
}

func (s *LoopCatalogState) ensureIndex() {
	if s.byName != nil {
		return
	}
	if s.Packages == nil {
		s.Packages = map[string]*LoopPackage{}
	}
	if s.Versions == nil {
		s.Versions = map[string]*LoopVersion{}
	}
	if s.Blobs == nil {
		s.Blobs = map[string]*LoopBlob{}
	}
	if s.Audit == nil {
		s.Audit = map[string]*LoopAuditEntry{}
	}
	s.byName = map[string][]loopIndexEntry{}
	for key, v := range s.Versions {
		s.index(key, v)
	}
	s.shapes = map[string]loopShape{}
	s.views = map[string]*LoopView{}
	s.blobBytes = 0
	for _, b := range s.Blobs {
		s.blobBytes += len(b.Data)
	}
}

func (s *LoopCatalogState) index(key string, v *LoopVersion) {
	sv, err := ParseSemVer(v.Version)
	if err != nil {
		return // never stored: Publish parsed it
	}
	list := s.byName[v.Name]
	i, found := slices.BinarySearchFunc(list, sv, func(e loopIndexEntry, t SemVer) int { return e.sv.Compare(t) })
	if found {
		list[i].key = key
		return
	}
	s.byName[v.Name] = slices.Insert(list, i, loopIndexEntry{key: key, sv: sv})
}

// Apply applies one record of the catalog.
func (s *LoopCatalogState) Apply(r Record) error {
	if handled, err := s.ApplyLoopRecord(r); handled {
		return err
	}
	return fmt.Errorf("loop catalog state: unknown record kind %q", r.Kind)
}

// ApplyLoopRecord applies r when it is a loop catalog record (for a state that holds a catalog
// as one of its parts), reporting whether it was.
func (s *LoopCatalogState) ApplyLoopRecord(r Record) (bool, error) {
	switch r.Kind {
	case KindLoop, KindLoopVersion, KindLoopBlob, KindLoopAudit:
	default:
		return false, nil
	}
	s.ensureIndex()
	switch r.Kind {
	case KindLoop:
		delete(s.views, r.ID)
		if r.Del {
			delete(s.Packages, r.ID)
			return true, nil
		}
		v, ok := r.Value.(*LoopPackage)
		if !ok {
			return true, fmt.Errorf("loop record %s has value %T", r.ID, r.Value)
		}
		s.Packages[r.ID] = v
	case KindLoopVersion:
		if old, ok := s.Versions[r.ID]; ok {
			delete(s.views, old.Name)
		}
		if r.Del {
			if v, ok := s.Versions[r.ID]; ok {
				delete(s.Versions, r.ID)
				s.byName[v.Name] = slices.DeleteFunc(s.byName[v.Name], func(e loopIndexEntry) bool { return e.key == r.ID })
			}
			return true, nil
		}
		v, ok := r.Value.(*LoopVersion)
		if !ok {
			return true, fmt.Errorf("loop version record %s has value %T", r.ID, r.Value)
		}
		s.Versions[r.ID] = v
		delete(s.views, v.Name)
		s.index(r.ID, v)
	case KindLoopBlob:
		if old, ok := s.Blobs[r.ID]; ok {
			s.blobBytes -= len(old.Data)
		}
		delete(s.shapes, r.ID)
		if r.Del {
			delete(s.Blobs, r.ID)
			return true, nil
		}
		v, ok := r.Value.(*LoopBlob)
		if !ok {
			return true, fmt.Errorf("loop blob record %s has value %T", r.ID, r.Value)
		}
		s.Blobs[r.ID] = v
		s.blobBytes += len(v.Data)
	case KindLoopAudit:
		if r.Del {
			delete(s.Audit, r.ID)
			return true, nil
		}
		v, ok := r.Value.(*LoopAuditEntry)
		if !ok {
			return true, fmt.Errorf("loop audit record %s has value %T", r.ID, r.Value)
		}
		s.Audit[r.ID] = v
	}
	return true, nil
}

func loopVersionID(name string, sv SemVer) string { return name + loopVersionIDSeparator + sv.Core() }

func loopAuditID(name string, seq int64) string {
	return fmt.Sprintf("%s%s%012d", name, loopAuditIDSeparator, seq)
}

// checkName parses a full name of this scope; another scope's name is not found.
func (s *LoopCatalogState) checkName(name string) error {
	scope, _, err := ParseLoopName(name)
	if err != nil {
		return Invalid("name", "%v", err)
	}
	if scope != s.Scope {
		return NotFound("Loop")
	}
	return nil
}

func (s *LoopCatalogState) pkg(name string) (*LoopPackage, error) {
	if err := s.checkName(name); err != nil {
		return nil, err
	}
	s.ensureIndex()
	p, ok := s.Packages[name]
	if !ok {
		return nil, NotFound("Loop")
	}
	return p, nil
}

// lookup finds name@version (build metadata, when given, must match the stored version's).
// Removed versions are found only when withRemoved.
func (s *LoopCatalogState) lookup(name, version string, withRemoved bool) (*LoopVersion, error) {
	if _, err := s.pkg(name); err != nil {
		return nil, err
	}
	sv, err := ParseSemVer(version)
	if err != nil {
		return nil, Invalid("version", "is not a semver 2.0 version: %v", err)
	}
	v, ok := s.Versions[loopVersionID(name, sv)]
	if !ok || (len(sv.Build) > 0 && v.Version != version) {
		return nil, NotFound("Loop version")
	}
	if v.RemovedAt != nil && !withRemoved {
		return nil, &Error{Code: ENOTFOUND, Message: fmt.Sprintf("Loop version %s@%s was removed", name, v.Version)}
	}
	return v, nil
}

// audit appends an audit entry to p (a copy the caller will Put), dropping the oldest entry
// beyond MaxLoopAuditEntries.
func audit(p *LoopPackage, e LoopAuditEntry) []Record {
	e.Seq, e.Name = p.AuditNext, p.Name
	p.AuditNext++
	recs := []Record{Put(KindLoopAudit, loopAuditID(p.Name, e.Seq), &e)}
	for p.AuditNext-p.AuditFirst > MaxLoopAuditEntries {
		recs = append(recs, Del(KindLoopAudit, loopAuditID(p.Name, p.AuditFirst)))
		p.AuditFirst++
	}
	return recs
}

func clonePackage(p *LoopPackage) *LoopPackage {
	c := *p
	c.DistTags = maps.Clone(p.DistTags)
	if c.DistTags == nil {
		c.DistTags = map[string]string{}
	}
	return &c
}

func cloneVersion(v *LoopVersion) *LoopVersion {
	c := *v
	c.Signatures = slices.Clone(v.Signatures)
	c.Keywords = slices.Clone(v.Keywords)
	return &c
}

// LoopPublishRequest is a publish: PUT /v1/loops/{name}/versions/{version} with the manifest.
type LoopPublishRequest struct {
	Name      string
	Version   string
	Manifest  []byte
	Publisher string
}

// LoopPublishResult is the published version; Created is false when the same content was
// already published (200 instead of 201).
type LoopPublishResult struct {
	Version LoopVersion
	Created bool
}

// Publish adds name@version: create-only. The same content again (by canonical digest) is a
// no-op; other content for a published version is 409 VERSION_EXISTS, also after the version
// was removed (a name@version is never reused). The manifest must validate, name the same name
// and version as the path, and keep every state and transition of the releases it is
// compatible with (409 BREAKING_CHANGE). The version is signed with signer; `latest` moves to it
// when it is a release higher than latest's version.
func (s *LoopCatalogState) Publish(req LoopPublishRequest, signer *LoopSigner, now time.Time) (LoopPublishResult, []Record, error) {
	return s.PublishPrepared(PrepareLoopPublish(req, signer), now)
}

// PreparedLoopPublish is a publish whose work that needs no catalog state is done: the manifest
// canonicalized, digested, validated and signed. Preparing runs outside the catalog's actor (a
// manifest of 1 MiB takes milliseconds), so that the actor only decides against its state; the
// errors found are reported by PublishPrepared in the order Publish checks them.
type PreparedLoopPublish struct {
	req       LoopPublishRequest
	sv        SemVer
	svErr     error
	noSigner  bool
	canonical []byte
	canonErr  error
	digest    string
	integrity string
	manifest  *LoopManifest
	parseErr  error
	signature LoopSignature
}

// PrepareLoopPublish does the stateless part of publishing req: pure, safe on any goroutine.
func PrepareLoopPublish(req LoopPublishRequest, signer *LoopSigner) *PreparedLoopPublish {
	p := &PreparedLoopPublish{req: req, noSigner: signer == nil}
	if len(req.Manifest) > MaxLoopManifestBytes {
		return p
	}
	p.sv, p.svErr = ParseSemVer(req.Version)
	if p.svErr != nil || p.noSigner {
		return p
	}
	if p.canonical, p.canonErr = CanonicalJSON(req.Manifest); p.canonErr != nil {
		return p
	}
	p.digest = LoopDigest(p.canonical)
	if p.manifest, p.parseErr = ParseLoopManifest(p.canonical); p.parseErr != nil {
		return p
	}
	if p.manifest.Name == req.Name && p.manifest.Version == req.Version {
		p.integrity = LoopIntegrity(p.canonical)
		p.signature = signer.Sign(req.Name, req.Version, p.integrity)
	}
	return p
}

// PublishPrepared is Publish's decision against the state, for a prepared publish.
func (s *LoopCatalogState) PublishPrepared(prep *PreparedLoopPublish, now time.Time) (LoopPublishResult, []Record, error) {
	var res LoopPublishResult
	req := prep.req
	if len(req.Manifest) > MaxLoopManifestBytes {
		return res, nil, Errorf(ETOOLARGE, "A loop manifest is at most %d bytes (1 MiB)", MaxLoopManifestBytes)
	}
	if err := s.checkName(req.Name); err != nil {
		return res, nil, err
	}
	if prep.svErr != nil {
		return res, nil, Invalid("version", "is not a semver 2.0 version: %v", prep.svErr)
	}
	if prep.noSigner {
		return res, nil, Errorf(EINTERNAL, "loop catalog has no signing key")
	}
	s.ensureIndex()
	if prep.canonErr != nil {
		return res, nil, prep.canonErr
	}
	sv, canonical, digest := prep.sv, prep.canonical, prep.digest
	id := loopVersionID(req.Name, sv)
	if old, ok := s.Versions[id]; ok {
		switch {
		case old.RemovedAt != nil:
			return res, nil, &Error{Code: EVERSIONEXISTS, Message: fmt.Sprintf(
				"%s@%s was published and removed; a name@version is never reused: publish a new version", req.Name, old.Version),
				Details: map[string][]string{"version": {"was removed; choose a new version"}}}
		case old.Digest == digest && old.Version == req.Version:
			return LoopPublishResult{Version: *old}, nil, nil
		case old.Version != req.Version:
			return res, nil, &Error{Code: EVERSIONEXISTS, Message: fmt.Sprintf(
				"%s@%s exists; %s differs only in build metadata, which does not make a new version", req.Name, old.Version, req.Version),
				Details: map[string][]string{"version": {"conflicts with " + old.Version}}}
		}
		return res, nil, &Error{Code: EVERSIONEXISTS, Message: fmt.Sprintf(
			"%s@%s is already published with other content (%s); published versions never change: publish a new version",
			req.Name, req.Version, old.Digest), Details: map[string][]string{"version": {"exists with digest " + old.Digest}}}
	}
	if prep.parseErr != nil {
		return res, nil, prep.parseErr
	}
	m := prep.manifest
	fe := FieldErrors{}
	if m.Name != req.Name {
		fe.Add("name", "the manifest names %q but is published as %q", m.Name, req.Name)
	}
	if m.Version != req.Version {
		fe.Add("version", "the manifest has version %q but is published as %q", m.Version, req.Version)
	}
	if err := fe.Err(); err != nil {
		return res, nil, err
	}
	p, exists := s.Packages[req.Name]
	switch {
	case !exists && len(s.Packages) >= MaxLoopsPerScope:
		return res, nil, Conflict("A catalog holds at most %d loops", MaxLoopsPerScope)
	case len(s.byName[req.Name]) >= MaxLoopVersions:
		return res, nil, Conflict("A loop has at most %d versions", MaxLoopVersions)
	case s.blobBytes+len(canonical) > MaxLoopScopeBytes:
		return res, nil, Errorf(ETOOLARGE, "A catalog holds at most %d MiB of manifests", MaxLoopScopeBytes>>20)
	}
	if err := s.checkCompatible(req.Name, sv, m); err != nil {
		return res, nil, err
	}

	now = now.UTC()
	v := &LoopVersion{
		LoopDist: LoopDist{Name: req.Name, Version: req.Version, Digest: digest, Integrity: prep.integrity,
			Signatures: []LoopSignature{prep.signature}},
		Domain: m.Domain, Description: m.Description, Keywords: m.Keywords, Size: len(canonical),
		Prerelease: sv.IsPrerelease(), PublishedAt: now, Publisher: req.Publisher,
	}
	v.setState()
	if exists {
		p = clonePackage(p)
	} else {
		p = &LoopPackage{Name: req.Name, DistTags: map[string]string{}, CreatedAt: now}
	}
	p.UpdatedAt = now
	recs := []Record{Put(KindLoopBlob, digest, &LoopBlob{Digest: digest, Data: canonical}), Put(KindLoopVersion, id, v)}
	recs = append(recs, audit(p, LoopAuditEntry{Action: LoopActionPublish, Version: req.Version, Actor: req.Publisher, At: now})...)
	if cur, ok := p.DistTags[LatestTag]; !sv.IsPrerelease() && (!ok || higherThanTagged(sv, cur)) {
		recs = append(recs, audit(p, LoopAuditEntry{Action: LoopActionTagSet, Tag: LatestTag, Version: req.Version,
			From: cur, Actor: req.Publisher + loopAutomaticActorNote, At: now})...)
		p.DistTags[LatestTag] = req.Version
	}
	recs = append(recs, Put(KindLoop, req.Name, p))
	return LoopPublishResult{Version: *v, Created: true}, recs, nil
}

// higherThanTagged reports whether sv is above the version a tag points at (a tag pointing at
// nothing parseable counts as lower).
func higherThanTagged(sv SemVer, tagged string) bool {
	cur, err := ParseSemVer(tagged)
	return err != nil || sv.Compare(cur) > 0
}

// loopShape is what the compatibility check compares: states and transitions.
type loopShape struct {
	States      []string              `json:"states"`
	Transitions []loopShapeTransition `json:"transitions"`
}

type loopShapeTransition struct {
	Name string   `json:"name"`
	From []string `json:"from"`
	To   string   `json:"to"`
}

func shapeOf(m *LoopManifest) loopShape {
	sh := loopShape{States: m.States}
	for _, t := range m.Transitions {
		sh.Transitions = append(sh.Transitions, loopShapeTransition{Name: t.Name, From: t.From, To: t.To})
	}
	return sh
}

// compatGroup is the set of releases a caret range treats as compatible with v: the same major
// from 1.0.0, the same minor in 0.y (y >= 1); every 0.0.z stands alone (false).
func compatGroup(v SemVer) ([2]uint64, bool) {
	switch {
	case v.Major > 0:
		return [2]uint64{v.Major, 0}, true
	case v.Minor > 0:
		return [2]uint64{0, v.Minor}, true
	}
	return [2]uint64{}, false
}

// checkCompatible refuses a release that removes a state or transition (or a source state of a
// transition, or changes its target) of the previous release of its compatibility group, or
// that lacks one the next release of the group already has (a back-filled patch). Pre-releases,
// yanked and removed versions are neither checked nor compared against.
func (s *LoopCatalogState) checkCompatible(name string, sv SemVer, m *LoopManifest) error {
	group, ok := compatGroup(sv)
	if !ok || sv.IsPrerelease() {
		return nil
	}
	var prev, next *LoopVersion
	for _, e := range s.byName[name] {
		g, ok := compatGroup(e.sv)
		v := s.Versions[e.key]
		if !ok || g != group || e.sv.IsPrerelease() || !v.installable() {
			continue
		}
		switch c := e.sv.Compare(sv); {
		case c < 0:
			prev = v // ascending order: the last one below is the previous release
		case c > 0 && next == nil:
			next = v
		}
	}
	mine := shapeOf(m)
	check := func(older loopShape, olderVersion string, newer loopShape, newerVersion string, verdict string) error {
		removed := shapeRemovals(older, newer)
		if len(removed) == 0 {
			return nil
		}
		var parts []string
		for _, k := range detailKeysSorted(removed) {
			parts = append(parts, k+": "+strings.Join(removed[k], ", "))
		}
		major := fmt.Sprintf("%d.0.0", sv.Major+1)
		if sv.Major == 0 {
			major = fmt.Sprintf("0.%d.0", sv.Minor+1)
		}
		return &Error{Code: EBREAKINGCHANGE, Message: fmt.Sprintf(
			"%s: %s@%s removes what %s has (%s). A minor or patch release keeps every state and transition of its major; publish the change as %s",
			verdict, name, newerVersion, olderVersion, strings.Join(parts, "; "), major), Details: removed}
	}
	if prev != nil {
		older, err := s.shapeOfVersion(prev)
		if err != nil {
			return err
		}
		if err := check(older, prev.Version, mine, sv.String(), "Breaking change"); err != nil {
			return err
		}
	}
	if next != nil {
		newer, err := s.shapeOfVersion(next)
		if err != nil {
			return err
		}
		if err := check(mine, sv.String(), newer, next.Version, "Breaking change against a later release"); err != nil {
			return err
		}
	}
	return nil
}

func (s *LoopCatalogState) shapeOfVersion(v *LoopVersion) (loopShape, error) {
	if sh, ok := s.shapes[v.Digest]; ok {
		return sh, nil
	}
	var sh loopShape
	b, ok := s.Blobs[v.Digest]
	if !ok {
		return sh, fmt.Errorf("loop catalog: blob %s of %s@%s is missing", v.Digest, v.Name, v.Version)
	}
	if err := json.Unmarshal(b.Data, &sh); err != nil {
		return sh, fmt.Errorf("loop catalog: decode %s@%s: %w", v.Name, v.Version, err)
	}
	s.shapes[v.Digest] = sh
	return sh, nil
}

// shapeRemovals lists what older has and newer lacks, keyed by where it was: states,
// transitions, transitions.<name>.from, transitions.<name>.to.
func shapeRemovals(older, newer loopShape) map[string][]string {
	out := map[string][]string{}
	for _, st := range older.States {
		if !slices.Contains(newer.States, st) {
			out["states"] = append(out["states"], st)
		}
	}
	for _, ot := range older.Transitions {
		i := slices.IndexFunc(newer.Transitions, func(t loopShapeTransition) bool { return t.Name == ot.Name })
		if i < 0 {
			out["transitions"] = append(out["transitions"], ot.Name)
			continue
		}
		nt := newer.Transitions[i]
		for _, f := range ot.From {
			if !slices.Contains(nt.From, f) {
				out["transitions."+ot.Name+".from"] = append(out["transitions."+ot.Name+".from"], f)
			}
		}
		if nt.To != ot.To {
			out["transitions."+ot.Name+".to"] = []string{fmt.Sprintf("%s (now %s)", ot.To, nt.To)}
		}
	}
	return out
}

func detailKeysSorted(m map[string][]string) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.Sort(keys)
	return keys
}
