package supplyplan

import (
	"fmt"
	"strings"
)

// Version ranges with node-semver's semantics (github.com/npm/node-semver, classes/range.js):
// the same desugaring of caret, tilde, x-ranges, stars and hyphen ranges into comparator sets,
// the same `||` union, and the same pre-release rule. A range is a union of comparator sets; a
// version satisfies a set when it satisfies every comparator of it and, when it is a pre-release
// and includePrerelease is off, some comparator of the set names a pre-release of the same
// [major, minor, patch] tuple (so ^1.2.3-beta.1 admits 1.2.3-beta.2 but never 1.2.4-alpha).
//
// Desugaring (node-semver's own table; z is "-0" with includePrerelease, else empty):
//
//	^1.2.3 := >=1.2.3 <2.0.0-0     ^0.1.3 := >=0.1.3 <0.2.0-0     ^0.0.1 := >=0.0.1 <0.0.2-0
//	^1.2   := >=1.2.0z <2.0.0-0    ^0.0   := >=0.0.0z <0.1.0-0    ^1 := >=1.0.0z <2.0.0-0
//	~1.2.3 := >=1.2.3 <1.3.0-0     ~1.2   := >=1.2.0 <1.3.0-0     ~1 := >=1.0.0 <2.0.0-0
//	1.2.x  := >=1.2.0z <1.3.0-0    1.x    := >=1.0.0z <2.0.0-0    *, x, "" := any
//	>1.2   := >=1.3.0z             <=1.2  := <1.3.0-0             <1.2 := <1.2.0-0
//	1.2 - 2.3.4 := >=1.2.0 <=2.3.4 (with includePrerelease: >=1.2.0-0 <2.3.5-0)
//
// The "-0" upper bounds make 2.0.0-alpha fall outside ^1.2.3 even with includePrerelease.

// MaxSemVerRangeLength bounds the text of a range (a query parameter).
const MaxSemVerRangeLength = 1024

// SemVerRange is a parsed range.
type SemVerRange struct {
	set               [][]semverComparator
	includePrerelease bool
}

// semverComparator is one `op version` test. op is "", "<", "<=", ">" or ">=" ("" is equality);
// any matches every version.
type semverComparator struct {
	op  string
	ver SemVer
	any bool
}

var semverAny = semverComparator{any: true}

func (c semverComparator) String() string {
	if c.any {
		return ""
	}
	return c.op + c.ver.Core()
}

func (c semverComparator) isNullSet() bool {
	return !c.any && c.op == "<" && c.ver.Major == 0 && c.ver.Minor == 0 && c.ver.Patch == 0 &&
		len(c.ver.Pre) == 1 && c.ver.Pre[0] == "0"
}

func (c semverComparator) test(v SemVer) bool {
	if c.any {
		return true
	}
	d := v.Compare(c.ver)
	switch c.op {
	case "<":
		return d < 0
	case "<=":
		return d <= 0
	case ">":
		return d > 0
	case ">=":
		return d >= 0
	}
	return d == 0
}

// ParseSemVerRange parses a node-semver range such as "^1.2", "~1.2.3 || >=2.0.0 <2.1.0-0",
// "1.x", "1.2.3 - 1.4". includePrerelease lets pre-release versions satisfy comparator sets that
// do not name a pre-release of the same tuple (and widens x-range lower bounds to -0).
func ParseSemVerRange(s string, includePrerelease bool) (SemVerRange, error) {
	r := SemVerRange{includePrerelease: includePrerelease}
	if len(s) > MaxSemVerRangeLength {
		return r, fmt.Errorf("must be at most %d characters", MaxSemVerRangeLength)
	}
	for _, part := range strings.Split(s, "||") {
		set, err := r.parseSet(strings.TrimSpace(part))
		if err != nil {
			return SemVerRange{}, err
		}
		r.set = append(r.set, set)
	}
	// As node-semver: with several sets, drop the null sets (keeping one if all are null), and a
	// set that matches anything makes the whole range match anything.
	if len(r.set) > 1 {
		first := r.set[0]
		kept := r.set[:0]
		for _, set := range r.set {
			if !set[0].isNullSet() {
				kept = append(kept, set)
			}
		}
		r.set = kept
		if len(r.set) == 0 {
			r.set = [][]semverComparator{first}
		}
		for _, set := range r.set {
			if len(set) == 1 && set[0].any {
				r.set = [][]semverComparator{set}
				break
			}
		}
	}
	return r, nil
}

// MustParseSemVerRange is ParseSemVerRange for constants; it panics on an invalid range.
func MustParseSemVerRange(s string, includePrerelease bool) SemVerRange {
	r, err := ParseSemVerRange(s, includePrerelease)
	if err != nil {
		panic("supplyplan: invalid range " + s + ": " + err.Error())
	}
	return r
}

// String renders the desugared range as node-semver's validRange does ("*" for any).
func (r SemVerRange) String() string {
	sets := make([]string, len(r.set))
	for i, set := range r.set {
		comps := make([]string, len(set))
		for j, c := range set {
			comps[j] = c.String()
		}
		sets[i] = strings.TrimSpace(strings.Join(comps, " "))
	}
	if s := strings.TrimSpace(strings.Join(sets, "||")); s != "" {
		return s
	}
	return "*"
}

// Contains reports whether v satisfies the range.
func (r SemVerRange) Contains(v SemVer) bool {
	for _, set := range r.set {
		if r.testSet(set, v) {
			return true
		}
	}
	return false
}

func (r SemVerRange) testSet(set []semverComparator, v SemVer) bool {
	for _, c := range set {
		if !c.test(v) {
			return false
		}
	}
	if len(v.Pre) == 0 || r.includePrerelease {
		return true
	}
	// A pre-release passes only when a comparator of the set names a pre-release of its tuple.
	for _, c := range set {
		if !c.any && len(c.ver.Pre) > 0 && c.ver.sameTuple(v) {
			return true
		}
	}
	return false
}

// parseSet parses one `||` alternative into its comparators.
func (r SemVerRange) parseSet(part string) ([]semverComparator, error) {
	fields := strings.Fields(part)
	var comps []semverComparator
	if len(fields) == 3 && fields[1] == "-" {
		from, okFrom := parsePartialVersion(fields[0])
		to, okTo := parsePartialVersion(fields[2])
		if !okFrom || !okTo {
			return nil, fmt.Errorf("invalid hyphen range %q", part)
		}
		comps = r.hyphen(from, to)
	} else {
		// An operator written apart from its version ("> 1.2.3", "~ 1.0", "^ 1") belongs to it.
		var tokens []string
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			if isRangeOperator(f) && i+1 < len(fields) {
				f += fields[i+1]
				i++
			}
			tokens = append(tokens, f)
		}
		if len(tokens) == 0 {
			tokens = []string{""}
		}
		for _, tok := range tokens {
			cs, err := r.parseToken(tok)
			if err != nil {
				return nil, err
			}
			comps = append(comps, cs...)
		}
	}
	// >=0.0.0 (>=0.0.0-0 with includePrerelease) is any; a null set is the whole set; duplicate
	// comparators count once; "any" disappears next to anything else.
	seen := map[string]int{}
	var out []semverComparator
	for _, c := range comps {
		if !c.any && c.op == ">=" && c.ver.Major == 0 && c.ver.Minor == 0 && c.ver.Patch == 0 &&
			((!r.includePrerelease && len(c.ver.Pre) == 0) ||
				(r.includePrerelease && len(c.ver.Pre) == 1 && c.ver.Pre[0] == "0")) {
			c = semverAny
		}
		if c.isNullSet() {
			return []semverComparator{c}, nil
		}
		key := c.String()
		if i, dup := seen[key]; dup {
			out[i] = c
			continue
		}
		seen[key] = len(out)
		out = append(out, c)
	}
	if len(out) > 1 {
		kept := out[:0]
		for _, c := range out {
			if !c.any {
				kept = append(kept, c)
			}
		}
		out = kept
	}
	return out, nil
}

func isRangeOperator(f string) bool {
	switch f {
	case "<", ">", "<=", ">=", "=", "~", "~>", "^":
		return true
	}
	return false
}

// parseToken desugars one comparator token: ^partial, ~partial, ~>partial or [op]partial.
func (r SemVerRange) parseToken(tok string) ([]semverComparator, error) {
	bad := fmt.Errorf("invalid comparator %q", tok)
	if tok == "" {
		return []semverComparator{semverAny}, nil
	}
	switch {
	case tok[0] == '^':
		p, ok := parsePartialVersion(tok[1:])
		if !ok {
			return nil, bad
		}
		return r.caret(p), nil
	case tok[0] == '~':
		rest := strings.TrimPrefix(tok[1:], ">")
		p, ok := parsePartialVersion(rest)
		if !ok {
			return nil, bad
		}
		return tilde(p), nil
	}
	op := ""
	for _, o := range []string{">=", "<=", ">", "<", "="} {
		if strings.HasPrefix(tok, o) {
			op = o
			break
		}
	}
	p, ok := parsePartialVersion(tok[len(op):])
	if !ok {
		return nil, bad
	}
	return r.xrange(op, p), nil
}

// partialVersion is node-semver's XRANGEPLAIN: 1 to 3 parts, each a number or x, X, *; a
// pre-release (and ignored build metadata) only after a third part.
type partialVersion struct {
	n   [3]uint64
	x   [3]bool // the part is a wildcard or missing
	pre []string
}

func parsePartialVersion(s string) (partialVersion, bool) {
	var p partialVersion
	s = strings.TrimLeft(s, "v=")
	if s == "" {
		return p, false
	}
	main := s
	var pre, build string
	hasPre, hasBuild := false, false
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		main = s[:i]
		rest := s[i:]
		if rest[0] == '-' {
			hasPre = true
			pre = rest[1:]
			if j := strings.IndexByte(pre, '+'); j >= 0 {
				hasBuild, build = true, pre[j+1:]
				pre = pre[:j]
			}
		} else {
			hasBuild, build = true, rest[1:]
		}
	}
	parts := strings.Split(main, ".")
	if len(parts) > 3 {
		return p, false
	}
	if (hasPre || hasBuild) && len(parts) != 3 {
		return p, false
	}
	for i := range 3 {
		if i >= len(parts) {
			p.x[i] = true
			continue
		}
		switch parts[i] {
		case "x", "X", "*":
			p.x[i] = true
			continue
		}
		// Node-semver checks the same limit when it builds the comparator's version.
		n, err := semverNumber(parts[i])
		if err != nil {
			return p, false
		}
		p.n[i] = n
	}
	if hasPre {
		ids, err := semverIdentifiers(pre, true)
		if err != nil {
			return p, false
		}
		p.pre = ids
	}
	if hasBuild {
		if _, err := semverIdentifiers(build, false); err != nil {
			return p, false
		}
	}
	return p, true
}

func newSemVer(major, minor, patch uint64, pre ...string) SemVer {
	return SemVer{Major: major, Minor: minor, Patch: patch, Pre: pre}
}

func cmpGE(v SemVer) semverComparator { return semverComparator{op: ">=", ver: v} }
func cmpLT(v SemVer) semverComparator { return semverComparator{op: "<", ver: v} }

// zero is the pre-release "-0" (the lowest) when includePrerelease widens lower bounds.
func (r SemVerRange) zero() []string {
	if r.includePrerelease {
		return []string{"0"}
	}
	return nil
}

func (r SemVerRange) caret(p partialVersion) []semverComparator {
	M, m, pt := p.n[0], p.n[1], p.n[2]
	z := r.zero()
	switch {
	case p.x[0]:
		return []semverComparator{semverAny}
	case p.x[1]:
		return []semverComparator{cmpGE(newSemVer(M, 0, 0, z...)), cmpLT(newSemVer(M+1, 0, 0, "0"))}
	case p.x[2]:
		if M == 0 {
			return []semverComparator{cmpGE(newSemVer(0, m, 0, z...)), cmpLT(newSemVer(0, m+1, 0, "0"))}
		}
		return []semverComparator{cmpGE(newSemVer(M, m, 0, z...)), cmpLT(newSemVer(M+1, 0, 0, "0"))}
	}
	lo := newSemVer(M, m, pt, z...)
	if len(p.pre) > 0 {
		lo = newSemVer(M, m, pt, p.pre...)
	}
	if M == 0 {
		if m == 0 {
			return []semverComparator{cmpGE(lo), cmpLT(newSemVer(0, 0, pt+1, "0"))}
		}
		return []semverComparator{cmpGE(lo), cmpLT(newSemVer(0, m+1, 0, "0"))}
	}
	if len(p.pre) == 0 {
		lo = newSemVer(M, m, pt) // node-semver: no -0 on ^1.2.3 even with includePrerelease
	}
	return []semverComparator{cmpGE(lo), cmpLT(newSemVer(M+1, 0, 0, "0"))}
}

func tilde(p partialVersion) []semverComparator {
	M, m, pt := p.n[0], p.n[1], p.n[2]
	switch {
	case p.x[0]:
		return []semverComparator{semverAny}
	case p.x[1]:
		return []semverComparator{cmpGE(newSemVer(M, 0, 0)), cmpLT(newSemVer(M+1, 0, 0, "0"))}
	case p.x[2]:
		return []semverComparator{cmpGE(newSemVer(M, m, 0)), cmpLT(newSemVer(M, m+1, 0, "0"))}
	}
	return []semverComparator{cmpGE(newSemVer(M, m, pt, p.pre...)), cmpLT(newSemVer(M, m+1, 0, "0"))}
}

func (r SemVerRange) xrange(op string, p partialVersion) []semverComparator {
	xM := p.x[0]
	xm := xM || p.x[1]
	xp := xm || p.x[2]
	if op == "=" && xp {
		op = ""
	}
	pr := r.zero()
	M, m, pt := p.n[0], p.n[1], p.n[2]
	switch {
	case xM:
		if op == ">" || op == "<" {
			return []semverComparator{cmpLT(newSemVer(0, 0, 0, "0"))} // nothing is allowed
		}
		return []semverComparator{semverAny}
	case op != "" && xp:
		if xm {
			m = 0
		}
		pt = 0
		switch op {
		case ">":
			// >1 := >=2.0.0, >1.2 := >=1.3.0
			op = ">="
			if xm {
				M, m = M+1, 0
			} else {
				m++
			}
		case "<=":
			// <=0.7.x := <0.8.0-0, <=7.x := <8.0.0-0
			op = "<"
			if xm {
				M++
			} else {
				m++
			}
		}
		if op == "<" {
			pr = []string{"0"}
		}
		return []semverComparator{{op: op, ver: newSemVer(M, m, pt, pr...)}}
	case xm:
		return []semverComparator{cmpGE(newSemVer(M, 0, 0, pr...)), cmpLT(newSemVer(M+1, 0, 0, "0"))}
	case xp:
		return []semverComparator{cmpGE(newSemVer(M, m, 0, pr...)), cmpLT(newSemVer(M, m+1, 0, "0"))}
	}
	if op == "=" {
		op = ""
	}
	return []semverComparator{{op: op, ver: newSemVer(M, m, pt, p.pre...)}}
}

// hyphen desugars `from - to`: an inclusive range whose partial ends widen as x-ranges do.
func (r SemVerRange) hyphen(from, to partialVersion) []semverComparator {
	var out []semverComparator
	z := r.zero()
	switch {
	case from.x[0]:
	case from.x[1]:
		out = append(out, cmpGE(newSemVer(from.n[0], 0, 0, z...)))
	case from.x[2]:
		out = append(out, cmpGE(newSemVer(from.n[0], from.n[1], 0, z...)))
	case len(from.pre) > 0:
		out = append(out, cmpGE(newSemVer(from.n[0], from.n[1], from.n[2], from.pre...)))
	default:
		out = append(out, cmpGE(newSemVer(from.n[0], from.n[1], from.n[2], z...)))
	}
	switch {
	case to.x[0]:
	case to.x[1]:
		out = append(out, cmpLT(newSemVer(to.n[0]+1, 0, 0, "0")))
	case to.x[2]:
		out = append(out, cmpLT(newSemVer(to.n[0], to.n[1]+1, 0, "0")))
	case len(to.pre) > 0:
		out = append(out, semverComparator{op: "<=", ver: newSemVer(to.n[0], to.n[1], to.n[2], to.pre...)})
	case r.includePrerelease:
		out = append(out, cmpLT(newSemVer(to.n[0], to.n[1], to.n[2]+1, "0")))
	default:
		out = append(out, semverComparator{op: "<=", ver: newSemVer(to.n[0], to.n[1], to.n[2])})
	}
	if len(out) == 0 {
		out = append(out, semverAny)
	}
	return out
}

// Bounds returns versions no satisfying version is above (hi) or below (lo); ok is false for a
// side the range leaves open. A resolver over sorted versions scans only [lo, hi].
func (r SemVerRange) Bounds() (lo SemVer, loOK bool, hi SemVer, hiOK bool) {
	loOK, hiOK = true, true
	for i, set := range r.set {
		var setLo, setHi *SemVer
		for j := range set {
			c := &set[j]
			if c.any {
				continue
			}
			if c.op == "" || c.op == "<" || c.op == "<=" {
				if setHi == nil || c.ver.Compare(*setHi) < 0 {
					setHi = &c.ver
				}
			}
			if c.op == "" || c.op == ">" || c.op == ">=" {
				if setLo == nil || c.ver.Compare(*setLo) > 0 {
					setLo = &c.ver
				}
			}
		}
		if setHi == nil {
			hiOK = false
		} else if hiOK && (i == 0 || setHi.Compare(hi) > 0) {
			hi = *setHi
		}
		if setLo == nil {
			loOK = false
		} else if loOK && (i == 0 || setLo.Compare(lo) < 0) {
			lo = *setLo
		}
	}
	return lo, loOK, hi, hiOK
}
