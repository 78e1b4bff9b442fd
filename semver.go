package supplyplan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Semantic Versioning 2.0.0 (https://semver.org): the versions of published loops. Parsing is
// strict (no leading "v" or "=", no leading zeros, no empty identifiers); ranges (semver_range.go)
// accept node-semver's looser spellings.

// SemVer limits, the same as node-semver's: a version string of at most 256 characters and
// major, minor and patch numbers of at most 2^53-1 (JavaScript's largest safe integer), so that
// every version the catalog accepts is also one every npm-style client can read.
const (
	MaxSemVerLength = 256
	MaxSemVerNumber = 1<<53 - 1
)

// SemVer is a parsed version. Build metadata is kept for display but never affects precedence.
type SemVer struct {
	Major, Minor, Patch uint64
	// Pre are the pre-release identifiers ("alpha", "1"); empty for a release.
	Pre []string
	// Build are the build metadata identifiers.
	Build []string
}

// ParseSemVer parses a strict semver 2.0.0 version such as 1.2.3-rc.1+build.5.
func ParseSemVer(s string) (SemVer, error) {
	var v SemVer
	if s == "" {
		return v, errors.New("is empty")
	}
	if len(s) > MaxSemVerLength {
		return v, fmt.Errorf("must be at most %d characters", MaxSemVerLength)
	}
	rest := s
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		build := rest[i+1:]
		rest = rest[:i]
		ids, err := semverIdentifiers(build, false)
		if err != nil {
			return v, fmt.Errorf("build metadata %s", err)
		}
		v.Build = ids
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		ids, err := semverIdentifiers(rest[i+1:], true)
		if err != nil {
			return v, fmt.Errorf("pre-release %s", err)
		}
		v.Pre = ids
		rest = rest[:i]
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return v, errors.New("must be MAJOR.MINOR.PATCH with optional -PRERELEASE and +BUILD (e.g. 1.2.3, 1.0.0-rc.1)")
	}
	nums := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, err := semverNumber(p)
		if err != nil {
			return v, fmt.Errorf("%s %s", [3]string{"major", "minor", "patch"}[i], err)
		}
		*nums[i] = n
	}
	return v, nil
}

// MustParseSemVer is ParseSemVer for constants; it panics on an invalid version.
func MustParseSemVer(s string) SemVer {
	v, err := ParseSemVer(s)
	if err != nil {
		panic("supplyplan: invalid version " + s + ": " + err.Error())
	}
	return v
}

// semverNumber parses a numeric identifier: digits, no leading zero, at most MaxSemVerNumber.
func semverNumber(p string) (uint64, error) {
	if p == "" {
		return 0, errors.New("is empty")
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, fmt.Errorf("%q is not a number", p)
		}
	}
	if len(p) > 1 && p[0] == '0' {
		return 0, fmt.Errorf("%q has a leading zero", p)
	}
	n, err := strconv.ParseUint(p, 10, 64)
	if err != nil || n > MaxSemVerNumber {
		return 0, fmt.Errorf("%q is larger than %d", p, uint64(MaxSemVerNumber))
	}
	return n, nil
}

// semverIdentifiers splits dot-separated identifiers of [0-9A-Za-z-]; numeric pre-release
// identifiers must not have leading zeros.
func semverIdentifiers(s string, pre bool) ([]string, error) {
	ids := strings.Split(s, ".")
	for _, id := range ids {
		if id == "" {
			return nil, errors.New("has an empty identifier")
		}
		numeric := true
		for i := 0; i < len(id); i++ {
			c := id[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				numeric = false
			default:
				return nil, fmt.Errorf("identifier %q may only contain ASCII letters, digits and hyphens", id)
			}
		}
		if pre && numeric && len(id) > 1 && id[0] == '0' {
			return nil, fmt.Errorf("identifier %q has a leading zero", id)
		}
	}
	return ids, nil
}

// String renders the version with its build metadata.
func (v SemVer) String() string {
	s := v.Core()
	if len(v.Build) > 0 {
		s += "+" + strings.Join(v.Build, ".")
	}
	return s
}

// Core renders the version without build metadata: the part that identifies it for precedence.
func (v SemVer) Core() string {
	s := strconv.FormatUint(v.Major, 10) + "." + strconv.FormatUint(v.Minor, 10) + "." + strconv.FormatUint(v.Patch, 10)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	return s
}

// IsPrerelease reports whether v has pre-release identifiers.
func (v SemVer) IsPrerelease() bool { return len(v.Pre) > 0 }

// Compare orders versions by semver precedence (spec item 11): -1, 0 or +1. Build metadata is
// ignored, so 1.0.0+a and 1.0.0+b compare equal.
func (v SemVer) Compare(o SemVer) int {
	if c := cmpUint(v.Major, o.Major); c != 0 {
		return c
	}
	if c := cmpUint(v.Minor, o.Minor); c != 0 {
		return c
	}
	if c := cmpUint(v.Patch, o.Patch); c != 0 {
		return c
	}
	// A release has higher precedence than any of its pre-releases.
	switch {
	case len(v.Pre) == 0 && len(o.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(o.Pre) == 0:
		return -1
	}
	for i := 0; i < len(v.Pre) && i < len(o.Pre); i++ {
		if c := comparePreIdentifier(v.Pre[i], o.Pre[i]); c != 0 {
			return c
		}
	}
	return cmpUint(uint64(len(v.Pre)), uint64(len(o.Pre)))
}

// sameTuple reports whether v and o share [major, minor, patch].
func (v SemVer) sameTuple(o SemVer) bool {
	return v.Major == o.Major && v.Minor == o.Minor && v.Patch == o.Patch
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// comparePreIdentifier: numeric identifiers compare numerically (of any size: no leading zeros,
// so the longer one is larger), numeric ones are lower than alphanumeric ones, alphanumeric ones
// compare in ASCII order.
func comparePreIdentifier(a, b string) int {
	an, bn := isDigits(a), isDigits(b)
	switch {
	case an && bn:
		if len(a) != len(b) {
			return cmpUint(uint64(len(a)), uint64(len(b)))
		}
		return strings.Compare(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
