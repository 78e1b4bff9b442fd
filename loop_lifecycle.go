package supplyplan

import (
	"maps"
	"slices"
	"time"
)

// The loop catalog's lifecycle rules after publishing: dist-tags, deprecation, yank and removal.
// Each method returns the records of its change; the owner applies them.

// ValidateLoopTag checks a dist-tag name: 1-64 lowercase letters, digits, '.', '_' or '-',
// starting with a letter, and not readable as a version range (so "x" or "v1" are refused).
func ValidateLoopTag(tag string) error {
	if tag == "" || len(tag) > MaxLoopTagLength || tag[0] < 'a' || tag[0] > 'z' {
		return Invalid("tag", "must be 1 to %d lowercase letters, digits, '.', '_' or '-', starting with a letter", MaxLoopTagLength)
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return Invalid("tag", "must be 1 to %d lowercase letters, digits, '.', '_' or '-', starting with a letter", MaxLoopTagLength)
		}
	}
	if _, err := ParseSemVerRange(tag, false); err == nil {
		return Invalid("tag", "%q reads as a version range; choose another tag name", tag)
	}
	return nil
}

// SetDistTag points tag at version (a mutable pointer; every change is audited). The version
// must exist and not be yanked or removed.
func (s *LoopCatalogState) SetDistTag(name, tag, version, actor string, now time.Time) (map[string]string, []Record, error) {
	if err := ValidateLoopTag(tag); err != nil {
		return nil, nil, err
	}
	v, err := s.lookup(name, version, false)
	if err != nil {
		return nil, nil, err
	}
	if v.Yanked {
		return nil, nil, Conflict("%s@%s is yanked; a dist-tag cannot point at it (unyank it first)", name, v.Version)
	}
	p := s.Packages[name]
	cur, had := p.DistTags[tag]
	if had && cur == v.Version {
		return maps.Clone(p.DistTags), nil, nil
	}
	if !had && len(p.DistTags) >= MaxLoopDistTags {
		return nil, nil, Conflict("A loop has at most %d dist-tags", MaxLoopDistTags)
	}
	now = now.UTC()
	p = clonePackage(p)
	p.DistTags[tag] = v.Version
	p.UpdatedAt = now
	recs := audit(p, LoopAuditEntry{Action: LoopActionTagSet, Tag: tag, Version: v.Version, From: cur, Actor: actor, At: now})
	return maps.Clone(p.DistTags), append(recs, Put(KindLoop, name, p)), nil
}

// RemoveDistTag removes a dist-tag; `latest` cannot be removed, only moved.
func (s *LoopCatalogState) RemoveDistTag(name, tag, actor string, now time.Time) (map[string]string, []Record, error) {
	p, err := s.pkg(name)
	if err != nil {
		return nil, nil, err
	}
	if tag == LatestTag {
		return nil, nil, Conflict("The latest dist-tag cannot be removed; point it at another version")
	}
	cur, ok := p.DistTags[tag]
	if !ok {
		return nil, nil, NotFound("Dist-tag")
	}
	now = now.UTC()
	p = clonePackage(p)
	delete(p.DistTags, tag)
	p.UpdatedAt = now
	recs := audit(p, LoopAuditEntry{Action: LoopActionTagRemove, Tag: tag, From: cur, Actor: actor, At: now})
	return maps.Clone(p.DistTags), append(recs, Put(KindLoop, name, p)), nil
}

// Deprecate sets a version's deprecation message; an empty message un-deprecates. A deprecated
// version still resolves (with its message) when no other version satisfies the range.
func (s *LoopCatalogState) Deprecate(name, version, message, actor string, now time.Time) (LoopVersion, []Record, error) {
	if len([]rune(message)) > MaxLoopMessage {
		return LoopVersion{}, nil, Invalid("message", "must be at most %d characters", MaxLoopMessage)
	}
	cur, err := s.lookup(name, version, false)
	if err != nil {
		return LoopVersion{}, nil, err
	}
	if (message == "" && cur.Deprecated == nil) || (cur.Deprecated != nil && *cur.Deprecated == message) {
		return *cur, nil, nil
	}
	now = now.UTC()
	v := cloneVersion(cur)
	action := LoopActionDeprecate
	if message == "" {
		v.Deprecated, v.DeprecatedAt, action = nil, nil, LoopActionUndeprecate
	} else {
		v.Deprecated, v.DeprecatedAt = &message, &now
	}
	v.setState()
	p := clonePackage(s.Packages[name])
	p.UpdatedAt = now
	recs := []Record{Put(KindLoopVersion, loopVersionID(name, mustSemVer(v.Version)), v)}
	recs = append(recs, audit(p, LoopAuditEntry{Action: action, Version: v.Version, Message: message, Actor: actor, At: now})...)
	return *v, append(recs, Put(KindLoop, name, p)), nil
}

// Yank takes a version out of resolution (Cargo's yank): no range or tag chooses it any more,
// but it is still fetchable by exact version and digest, so running work keeps its definition.
// When `latest` pointed at it, latest moves back to the highest installable release.
func (s *LoopCatalogState) Yank(name, version, reason, actor string, now time.Time) (LoopVersion, []Record, error) {
	if len([]rune(reason)) > MaxLoopMessage {
		return LoopVersion{}, nil, Invalid("reason", "must be at most %d characters", MaxLoopMessage)
	}
	cur, err := s.lookup(name, version, false)
	if err != nil {
		return LoopVersion{}, nil, err
	}
	if cur.Yanked && cur.YankReason == reason {
		return *cur, nil, nil
	}
	now = now.UTC()
	v := cloneVersion(cur)
	v.Yanked, v.YankReason = true, reason
	if v.YankedAt == nil {
		v.YankedAt = &now
	}
	v.setState()
	p := clonePackage(s.Packages[name])
	p.UpdatedAt = now
	recs := []Record{Put(KindLoopVersion, loopVersionID(name, mustSemVer(v.Version)), v)}
	recs = append(recs, audit(p, LoopAuditEntry{Action: LoopActionYank, Version: v.Version, Message: reason, Actor: actor, At: now})...)
	recs = append(recs, s.retarget(p, v, actor, now)...)
	return *v, append(recs, Put(KindLoop, name, p)), nil
}

// Unyank returns a yanked version to resolution; `latest` moves to it when it is a release above
// latest's version.
func (s *LoopCatalogState) Unyank(name, version, actor string, now time.Time) (LoopVersion, []Record, error) {
	cur, err := s.lookup(name, version, false)
	if err != nil {
		return LoopVersion{}, nil, err
	}
	if !cur.Yanked {
		return *cur, nil, nil
	}
	now = now.UTC()
	v := cloneVersion(cur)
	v.Yanked, v.YankReason, v.YankedAt = false, "", nil
	v.setState()
	p := clonePackage(s.Packages[name])
	p.UpdatedAt = now
	recs := []Record{Put(KindLoopVersion, loopVersionID(name, mustSemVer(v.Version)), v)}
	recs = append(recs, audit(p, LoopAuditEntry{Action: LoopActionUnyank, Version: v.Version, Actor: actor, At: now})...)
	sv := mustSemVer(v.Version)
	if tagged, ok := p.DistTags[LatestTag]; !sv.IsPrerelease() && (!ok || higherThanTagged(sv, tagged)) {
		recs = append(recs, audit(p, LoopAuditEntry{Action: LoopActionTagSet, Tag: LatestTag, Version: v.Version,
			From: tagged, Actor: actor + loopAutomaticActorNote, At: now})...)
		p.DistTags[LatestTag] = v.Version
	}
	return *v, append(recs, Put(KindLoop, name, p)), nil
}

// retarget moves `latest` off gone (yanked or removed) to the highest other installable release,
// or drops it when there is none; on removal every other tag pointing at gone is dropped too.
func (s *LoopCatalogState) retarget(p *LoopPackage, gone *LoopVersion, actor string, now time.Time) []Record {
	var recs []Record
	for _, tag := range slices.Sorted(maps.Keys(p.DistTags)) {
		if p.DistTags[tag] != gone.Version || (tag != LatestTag && gone.RemovedAt == nil) {
			continue
		}
		next := ""
		if tag == LatestTag {
			list := s.byName[p.Name]
			for i := len(list) - 1; i >= 0; i-- {
				v := s.Versions[list[i].key]
				if v.Version != gone.Version && !list[i].sv.IsPrerelease() && v.installable() {
					next = v.Version
					break
				}
			}
		}
		if next == "" {
			delete(p.DistTags, tag)
			recs = append(recs, audit(p, LoopAuditEntry{Action: LoopActionTagRemove, Tag: tag, From: gone.Version,
				Actor: actor + loopAutomaticActorNote, At: now})...)
			continue
		}
		p.DistTags[tag] = next
		recs = append(recs, audit(p, LoopAuditEntry{Action: LoopActionTagSet, Tag: tag, Version: next, From: gone.Version,
			Actor: actor + loopAutomaticActorNote, At: now})...)
	}
	return recs
}

// Remove deletes a version (npm's unpublish): only within LoopDeleteWindow of publishing, and
// only while referenced reports no instance bound to it (the runtime supplies the predicate).
// The blob goes; the version stays as REMOVED, so its name@version is never reused.
func (s *LoopCatalogState) Remove(name, version string, referenced func(LoopVersion) bool, actor string, now time.Time) (LoopVersion, []Record, error) {
	cur, err := s.lookup(name, version, false)
	if err != nil {
		return LoopVersion{}, nil, err
	}
	if s.Scope == GlobalLoopScope && isBuiltinLoopVersion(name, cur.Version) {
		return LoopVersion{}, nil, Conflict("%s@%s is built in and cannot be removed (deprecate or yank it instead)", name, cur.Version)
	}
	if age := now.Sub(cur.PublishedAt); age > LoopDeleteWindow {
		return LoopVersion{}, nil, Conflict("%s@%s was published at %s; a version can be deleted only within %d hours of publishing (deprecate or yank it instead)",
			name, cur.Version, cur.PublishedAt.Format(time.RFC3339), int(LoopDeleteWindow/time.Hour))
	}
	if referenced != nil && referenced(*cur) {
		return LoopVersion{}, nil, Conflict("%s@%s is referenced by loop instances and cannot be deleted (yank it instead)", name, cur.Version)
	}
	now = now.UTC()
	v := cloneVersion(cur)
	v.RemovedAt = &now
	v.setState()
	p := clonePackage(s.Packages[name])
	p.UpdatedAt = now
	recs := []Record{Put(KindLoopVersion, loopVersionID(name, mustSemVer(v.Version)), v), Del(KindLoopBlob, v.Digest)}
	recs = append(recs, audit(p, LoopAuditEntry{Action: LoopActionRemove, Version: v.Version, Actor: actor, At: now})...)
	recs = append(recs, s.retarget(p, v, actor, now)...)
	return *v, append(recs, Put(KindLoop, name, p)), nil
}

func mustSemVer(s string) SemVer {
	v, _ := ParseSemVer(s) // stored versions were parsed on publish
	return v
}
