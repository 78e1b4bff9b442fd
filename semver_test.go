package supplyplan

import (
	"slices"
	"strings"
	"testing"
)

// The tables below are node-semver's own test fixtures (github.com/npm/node-semver,
// test/fixtures/{valid-versions,invalid-versions,comparisons,range-parse,range-include,
// range-exclude}.js), without their loose-mode rows (the catalog has no loose mode), plus the
// examples of the semver 2.0.0 specification (semver.org items 9-11 and its FAQ regex examples)
// and Masterminds/semver#180.

func TestParseSemVerValid(t *testing.T) {
	tests := []struct {
		in                  string
		major, minor, patch uint64
		pre, build          []string
	}{
		// node-semver valid-versions.js (without the "v1.2.3" row: strict parsing has no v prefix)
		{"1.0.0", 1, 0, 0, nil, nil},
		{"2.1.0", 2, 1, 0, nil, nil},
		{"3.2.1", 3, 2, 1, nil, nil},
		{"1.2.3-0", 1, 2, 3, []string{"0"}, nil},
		{"1.2.3-123", 1, 2, 3, []string{"123"}, nil},
		{"1.2.3-1.2.3", 1, 2, 3, []string{"1", "2", "3"}, nil},
		{"1.2.3-1a", 1, 2, 3, []string{"1a"}, nil},
		{"1.2.3-a1", 1, 2, 3, []string{"a1"}, nil},
		{"1.2.3-alpha", 1, 2, 3, []string{"alpha"}, nil},
		{"1.2.3-alpha.1", 1, 2, 3, []string{"alpha", "1"}, nil},
		{"1.2.3-alpha-1", 1, 2, 3, []string{"alpha-1"}, nil},
		{"1.2.3-alpha-.-beta", 1, 2, 3, []string{"alpha-", "-beta"}, nil},
		{"1.2.3+456", 1, 2, 3, nil, []string{"456"}},
		{"1.2.3+build", 1, 2, 3, nil, []string{"build"}},
		{"1.2.3+new-build", 1, 2, 3, nil, []string{"new-build"}},
		{"1.2.3+build.1", 1, 2, 3, nil, []string{"build", "1"}},
		{"1.2.3+build.1a", 1, 2, 3, nil, []string{"build", "1a"}},
		{"1.2.3+build.alpha.beta", 1, 2, 3, nil, []string{"build", "alpha", "beta"}},
		{"1.2.3-alpha+build", 1, 2, 3, []string{"alpha"}, []string{"build"}},
		// semver.org FAQ regex examples (valid)
		{"0.0.4", 0, 0, 4, nil, nil},
		{"10.20.30", 10, 20, 30, nil, nil},
		{"1.1.2-prerelease+meta", 1, 1, 2, []string{"prerelease"}, []string{"meta"}},
		{"1.1.2+meta-valid", 1, 1, 2, nil, []string{"meta-valid"}},
		{"1.0.0-alpha0.valid", 1, 0, 0, []string{"alpha0", "valid"}, nil},
		{"1.0.0-alpha.0valid", 1, 0, 0, []string{"alpha", "0valid"}, nil},
		{"1.0.0-rc.1+build.1", 1, 0, 0, []string{"rc", "1"}, []string{"build", "1"}},
		{"1.2.3----RC-SNAPSHOT.12.9.1--.12+788", 1, 2, 3, []string{"---RC-SNAPSHOT", "12", "9", "1--", "12"}, []string{"788"}},
		{"1.0.0+0.build.1-rc.10000aaa-kk-0.1", 1, 0, 0, nil, []string{"0", "build", "1-rc", "10000aaa-kk-0", "1"}},
		{"1.0.0-0A.is.legal", 1, 0, 0, []string{"0A", "is", "legal"}, nil},
		{"9007199254740991.0.0", MaxSemVerNumber, 0, 0, nil, nil},
	}
	for _, tt := range tests {
		v, err := ParseSemVer(tt.in)
		if err != nil {
			t.Errorf("ParseSemVer(%q): %v", tt.in, err)
			continue
		}
		if v.Major != tt.major || v.Minor != tt.minor || v.Patch != tt.patch || !slices.Equal(v.Pre, tt.pre) || !slices.Equal(v.Build, tt.build) {
			t.Errorf("ParseSemVer(%q) = %+v", tt.in, v)
		}
		if got := v.String(); got != tt.in {
			t.Errorf("ParseSemVer(%q).String() = %q", tt.in, got)
		}
	}
}

func TestParseSemVerInvalid(t *testing.T) {
	tests := []string{
		// node-semver invalid-versions.js
		strings.Repeat("1", 256) + ".0.0", // too long
		"90071992547409910.0.0",           // MAX_SAFE_INTEGER followed by 0: too big
		"0.90071992547409910.0",
		"0.0.90071992547409910",
		"hello, world",
		"xyz",
		// strict: node's loose spellings are not versions here
		"v1.2.3", "=1.2.3", " 1.2.3", "1.2.3 ", "1.2.3beta",
		// semver.org FAQ regex examples (invalid)
		"1", "1.2", "1.2.3-0123", "1.2.3-0123.0123", "1.1.2+.123", "+invalid", "-invalid",
		"-invalid+invalid", "-invalid.01", "alpha", "alpha.beta", "alpha.beta.1", "alpha.1",
		"alpha+beta", "alpha_beta", "alpha.", "alpha..", "beta", "1.0.0-alpha_beta", "-alpha.",
		"1.0.0-alpha..", "1.0.0-alpha..1", "1.0.0-alpha...1", "01.1.1", "1.01.1", "1.1.01",
		"1.2.3.DEV", "1.2-SNAPSHOT", "1.2.31.2.3----RC-SNAPSHOT.12.09.1--..12+788", "1.2-RC-SNAPSHOT",
		"-1.0.3-gamma+b7718", "+justmeta", "9.8.7+meta+meta", "9.8.7-whatever+meta+meta",
		"99999999999999999999999.999999999999999999.99999999999999999----RC-SNAPSHOT.12.09.1--------------------------------..12",
		"", "1.2.3-", "1.2.3+", "1.2.3-a.", "1.2.3+a..b", "1.2.3-ä",
	}
	for _, in := range tests {
		if v, err := ParseSemVer(in); err == nil {
			t.Errorf("ParseSemVer(%q) = %v, want an error", in, v)
		}
	}
}

func TestSemVerPrecedence(t *testing.T) {
	// node-semver comparisons.js: the first is greater than the second (strict rows only).
	greater := [][2]string{
		{"0.0.0", "0.0.0-foo"}, {"0.0.1", "0.0.0"}, {"1.0.0", "0.9.9"}, {"0.10.0", "0.9.0"},
		{"0.99.0", "0.10.0"}, {"2.0.0", "1.2.3"}, {"1.2.3", "1.2.3-asdf"}, {"1.2.3", "1.2.3-4"},
		{"1.2.3", "1.2.3-4-foo"}, {"1.2.3-5-foo", "1.2.3-5"}, {"1.2.3-5", "1.2.3-4"},
		{"1.2.3-5-foo", "1.2.3-5-Foo"}, {"3.0.0", "2.7.2+asdf"}, {"1.2.3-a.10", "1.2.3-a.5"},
		{"1.2.3-a.b", "1.2.3-a.5"}, {"1.2.3-a.b", "1.2.3-a"}, {"1.2.3-a.b.c.10.d.5", "1.2.3-a.b.c.5.d.100"},
		{"1.2.3-r2", "1.2.3-r100"}, {"1.2.3-r100", "1.2.3-R2"},
		// numeric identifiers beyond 64 bits still compare numerically
		{"1.0.0-123456789012345678901234567890", "1.0.0-99999999999999999999999999999"},
	}
	for _, p := range greater {
		a, b := MustParseSemVer(p[0]), MustParseSemVer(p[1])
		if a.Compare(b) != 1 || b.Compare(a) != -1 {
			t.Errorf("want %s > %s: Compare = %d / %d", p[0], p[1], a.Compare(b), b.Compare(a))
		}
	}
	// semver.org item 11: the precedence chain.
	chain := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "2.0.0", "2.1.0", "2.1.1"}
	for i := 1; i < len(chain); i++ {
		if c := MustParseSemVer(chain[i-1]).Compare(MustParseSemVer(chain[i])); c != -1 {
			t.Errorf("%s vs %s = %d, want -1", chain[i-1], chain[i], c)
		}
	}
	// Build metadata never counts (item 10; node-semver equality.js).
	for _, p := range [][2]string{{"1.2.3+build", "1.2.3"}, {"1.2.3+a", "1.2.3+b"}, {"1.2.3-beta+build", "1.2.3-beta+otherbuild"}} {
		if c := MustParseSemVer(p[0]).Compare(MustParseSemVer(p[1])); c != 0 {
			t.Errorf("%s vs %s = %d, want 0", p[0], p[1], c)
		}
	}
}

func TestSemVerRangeParse(t *testing.T) {
	// node-semver range-parse.js (strict rows): range -> desugared form.
	tests := []struct {
		in, want string
		incPre   bool
	}{
		{"1.0.0 - 2.0.0", ">=1.0.0 <=2.0.0", false},
		{"1.0.0 - 2.0.0", ">=1.0.0-0 <2.0.1-0", true},
		{"1 - 2", ">=1.0.0 <3.0.0-0", false},
		{"1 - 2", ">=1.0.0-0 <3.0.0-0", true},
		{"1.0 - 2.0", ">=1.0.0 <2.1.0-0", false},
		{"1.0 - 2.0", ">=1.0.0-0 <2.1.0-0", true},
		{"1.0.0", "1.0.0", false},
		{">=*", "*", false},
		{"", "*", false},
		{"*", "*", false},
		{">=1.0.0", ">=1.0.0", false},
		{">1.0.0", ">1.0.0", false},
		{"<=2.0.0", "<=2.0.0", false},
		{"1", ">=1.0.0 <2.0.0-0", false},
		{"<2.0.0", "<2.0.0", false},
		{">= 1.0.0", ">=1.0.0", false},
		{">=  1.0.0", ">=1.0.0", false},
		{">=   1.0.0", ">=1.0.0", false},
		{"> 1.0.0", ">1.0.0", false},
		{">  1.0.0", ">1.0.0", false},
		{"<=   2.0.0", "<=2.0.0", false},
		{"<= 2.0.0", "<=2.0.0", false},
		{"<=  2.0.0", "<=2.0.0", false},
		{"<    2.0.0", "<2.0.0", false},
		{"<\t2.0.0", "<2.0.0", false},
		{">=0.1.97", ">=0.1.97", false},
		{"0.1.20 || 1.2.4", "0.1.20||1.2.4", false},
		{">=0.2.3 || <0.0.1", ">=0.2.3||<0.0.1", false},
		{"||", "*", false},
		{"2.x.x", ">=2.0.0 <3.0.0-0", false},
		{"1.2.x", ">=1.2.0 <1.3.0-0", false},
		{"1.2.x || 2.x", ">=1.2.0 <1.3.0-0||>=2.0.0 <3.0.0-0", false},
		{"x", "*", false},
		{"2.*.*", ">=2.0.0 <3.0.0-0", false},
		{"1.2.*", ">=1.2.0 <1.3.0-0", false},
		{"1.2.* || 2.*", ">=1.2.0 <1.3.0-0||>=2.0.0 <3.0.0-0", false},
		{"2", ">=2.0.0 <3.0.0-0", false},
		{"2.3", ">=2.3.0 <2.4.0-0", false},
		{"~2.4", ">=2.4.0 <2.5.0-0", false},
		{"~>3.2.1", ">=3.2.1 <3.3.0-0", false},
		{"~1", ">=1.0.0 <2.0.0-0", false},
		{"~>1", ">=1.0.0 <2.0.0-0", false},
		{"~> 1", ">=1.0.0 <2.0.0-0", false},
		{"~1.0", ">=1.0.0 <1.1.0-0", false},
		{"~ 1.0", ">=1.0.0 <1.1.0-0", false},
		{"^0", "<1.0.0-0", false},
		{"^ 1", ">=1.0.0 <2.0.0-0", false},
		{"^0.1", ">=0.1.0 <0.2.0-0", false},
		{"^1.0", ">=1.0.0 <2.0.0-0", false},
		{"^1.2", ">=1.2.0 <2.0.0-0", false},
		{"^0.0.1", ">=0.0.1 <0.0.2-0", false},
		{"^0.0.1-beta", ">=0.0.1-beta <0.0.2-0", false},
		{"^0.1.2", ">=0.1.2 <0.2.0-0", false},
		{"^1.2.3", ">=1.2.3 <2.0.0-0", false},
		{"^1.2.3-beta.4", ">=1.2.3-beta.4 <2.0.0-0", false},
		{"<1", "<1.0.0-0", false},
		{"< 1", "<1.0.0-0", false},
		{">=1", ">=1.0.0", false},
		{">= 1", ">=1.0.0", false},
		{"<1.2", "<1.2.0-0", false},
		{"< 1.2", "<1.2.0-0", false},
		{"^ 1.2 ^ 1", ">=1.2.0 <2.0.0-0 >=1.0.0", false},
		{"1.2 - 3.4.5", ">=1.2.0 <=3.4.5", false},
		{"1.2.3 - 3.4", ">=1.2.3 <3.5.0-0", false},
		{"1.2 - 3.4", ">=1.2.0 <3.5.0-0", false},
		{">1", ">=2.0.0", false},
		{">1.2", ">=1.3.0", false},
		{">X", "<0.0.0-0", false},
		{"<X", "<0.0.0-0", false},
		{"<x <* || >* 2.x", "<0.0.0-0", false},
		{">x 2.x || * || <x", "*", false},
		// The 0.x caret rules, with and without includePrerelease.
		{"^0.1.3", ">=0.1.3 <0.2.0-0", false},
		{"^0.0.1", ">=0.0.1-0 <0.0.2-0", true},
		{"^1.x", ">=1.0.0-0 <2.0.0-0", true},
		{"^1.2.3", ">=1.2.3 <2.0.0-0", true},
		{"^1.2.3+build", ">=1.2.3 <2.0.0-0", false},
		{"=1.2.3", "1.2.3", false},
		{"v1.2.3", "1.2.3", false},
	}
	for _, tt := range tests {
		r, err := ParseSemVerRange(tt.in, tt.incPre)
		if err != nil {
			t.Errorf("ParseSemVerRange(%q, %v): %v", tt.in, tt.incPre, err)
			continue
		}
		if got := r.String(); got != tt.want {
			t.Errorf("ParseSemVerRange(%q, %v) = %q, want %q", tt.in, tt.incPre, got, tt.want)
		}
	}
	// range-parse.js null rows (not valid strict ranges) and other junk.
	for _, in := range []string{">01.02.03", "~1.2.3beta", "1.2.3 - ", "foo", ">=1.2.3 bar", "1.2.3.4", "^", "~",
		">=1.2.3<2.0.0", "1.2.3 -2.0.0", "1.2-beta", "^1.2.3-", strings.Repeat("1", MaxSemVerRangeLength+1)} {
		if r, err := ParseSemVerRange(in, false); err == nil {
			t.Errorf("ParseSemVerRange(%q) = %q, want an error", in, r)
		}
	}
}

func TestSemVerRangeContains(t *testing.T) {
	// node-semver range-include.js (strict rows) and range-exclude.js; the cases.
	type row struct {
		rng, ver string
		incPre   bool
	}
	include := []row{
		{"1.0.0 - 2.0.0", "1.2.3", false}, {"^1.2.3+build", "1.2.3", false}, {"^1.2.3+build", "1.3.0", false},
		{"1.2.3-pre+asdf - 2.4.3-pre+asdf", "1.2.3", false}, {"1.2.3-pre+asdf - 2.4.3-pre+asdf", "1.2.3-pre.2", false},
		{"1.2.3-pre+asdf - 2.4.3-pre+asdf", "2.4.3-alpha", false}, {"1.2.3+asdf - 2.4.3+asdf", "1.2.3", false},
		{"1.0.0", "1.0.0", false}, {">=*", "0.2.4", false}, {"", "1.0.0", false}, {"*", "1.2.3", false},
		{">=1.0.0", "1.0.0", false}, {">=1.0.0", "1.0.1", false}, {">=1.0.0", "1.1.0", false},
		{">1.0.0", "1.0.1", false}, {">1.0.0", "1.1.0", false}, {"<=2.0.0", "2.0.0", false},
		{"<=2.0.0", "1.9999.9999", false}, {"<=2.0.0", "0.2.9", false}, {"<2.0.0", "1.9999.9999", false},
		{"<2.0.0", "0.2.9", false}, {">= 1.0.0", "1.0.0", false}, {">=  1.0.0", "1.0.1", false},
		{">=   1.0.0", "1.1.0", false}, {"> 1.0.0", "1.0.1", false}, {">  1.0.0", "1.1.0", false},
		{"<=   2.0.0", "2.0.0", false}, {"<= 2.0.0", "1.9999.9999", false}, {"<=  2.0.0", "0.2.9", false},
		{"<    2.0.0", "1.9999.9999", false}, {"<\t2.0.0", "0.2.9", false}, {">=0.1.97", "0.1.97", false},
		{"0.1.20 || 1.2.4", "1.2.4", false}, {">=0.2.3 || <0.0.1", "0.0.0", false},
		{">=0.2.3 || <0.0.1", "0.2.3", false}, {">=0.2.3 || <0.0.1", "0.2.4", false}, {"||", "1.3.4", false},
		{"2.x.x", "2.1.3", false}, {"1.2.x", "1.2.3", false}, {"1.2.x || 2.x", "2.1.3", false},
		{"1.2.x || 2.x", "1.2.3", false}, {"x", "1.2.3", false}, {"2.*.*", "2.1.3", false},
		{"1.2.*", "1.2.3", false}, {"1.2.* || 2.*", "2.1.3", false}, {"1.2.* || 2.*", "1.2.3", false},
		{"*", "1.2.3", false}, {"2", "2.1.2", false}, {"2.3", "2.3.1", false}, {"~0.0.1", "0.0.1", false},
		{"~0.0.1", "0.0.2", false}, {"~x", "0.0.9", false}, {"~2", "2.0.9", false}, {"~2.4", "2.4.0", false},
		{"~2.4", "2.4.5", false}, {"~>3.2.1", "3.2.2", false}, {"~1", "1.2.3", false}, {"~>1", "1.2.3", false},
		{"~> 1", "1.2.3", false}, {"~1.0", "1.0.2", false}, {"~ 1.0", "1.0.2", false}, {"~ 1.0.3", "1.0.12", false},
		{">=1", "1.0.0", false}, {">= 1", "1.0.0", false}, {"<1.2", "1.1.1", false}, {"< 1.2", "1.1.1", false},
		{"~v0.5.4-pre", "0.5.5", false}, {"~v0.5.4-pre", "0.5.4", false}, {"=0.7.x", "0.7.2", false},
		{"<=0.7.x", "0.7.2", false}, {">=0.7.x", "0.7.2", false}, {"<=0.7.x", "0.6.2", false},
		{"~1.2.1 >=1.2.3", "1.2.3", false}, {"~1.2.1 =1.2.3", "1.2.3", false}, {"~1.2.1 1.2.3", "1.2.3", false},
		{"~1.2.1 >=1.2.3 1.2.3", "1.2.3", false}, {"~1.2.1 1.2.3 >=1.2.3", "1.2.3", false},
		{">=1.2.1 1.2.3", "1.2.3", false}, {"1.2.3 >=1.2.1", "1.2.3", false}, {">=1.2.3 >=1.2.1", "1.2.3", false},
		{">=1.2.1 >=1.2.3", "1.2.3", false}, {">=1.2", "1.2.8", false}, {"^1.2.3", "1.8.1", false},
		{"^0.1.2", "0.1.2", false}, {"^0.1", "0.1.2", false}, {"^0.0.1", "0.0.1", false}, {"^1.2", "1.4.2", false},
		{"^1.2 ^1", "1.4.2", false}, {"^1.2.3-alpha", "1.2.3-pre", false}, {"^1.2.0-alpha", "1.2.0-pre", false},
		{"^0.0.1-alpha", "0.0.1-beta", false}, {"^0.0.1-alpha", "0.0.1", false}, {"^0.1.1-alpha", "0.1.1-beta", false},
		{"^x", "1.2.3", false}, {"x - 1.0.0", "0.9.7", false}, {"x - 1.x", "0.9.7", false},
		{"1.0.0 - x", "1.9.7", false}, {"1.x - x", "1.9.7", false}, {"<=7.x", "7.9.9", false},
		{"2.x", "2.0.0-pre.0", true}, {"2.x", "2.1.0-pre.0", true}, {"*", "1.0.0-rc1", true},
		{"^1.0.0-0", "1.0.1-rc1", true}, {"^1.0.0-rc2", "1.0.1-rc1", true}, {"^1.0.0", "1.0.1-rc1", true},
		{"^1.0.0", "1.1.0-rc1", true},
		// the issue: ^0.1.3 := >=0.1.3 <0.2.0-0
		{"^0.1.3", "0.1.9", false},
	}
	exclude := []row{
		{"1.0.0 - 2.0.0", "2.2.3", false}, {"1.2.3+asdf - 2.4.3+asdf", "1.2.3-pre.2", false},
		{"1.2.3+asdf - 2.4.3+asdf", "2.4.3-alpha", false}, {"^1.2.3+build", "2.0.0", false},
		{"^1.2.3+build", "1.2.0", false}, {"^1.2.3", "1.2.3-pre", false}, {"^1.2", "1.2.0-pre", false},
		{">1.2", "1.3.0-beta", false}, {"<=1.2.3", "1.2.3-beta", false}, {"^1.2.3", "1.2.3-beta", false},
		{"=0.7.x", "0.7.0-asdf", false}, {">=0.7.x", "0.7.0-asdf", false}, {"1.0.0", "1.0.1", false},
		{">=1.0.0", "0.0.0", false}, {">=1.0.0", "0.0.1", false}, {">=1.0.0", "0.1.0", false},
		{">1.0.0", "0.0.1", false}, {">1.0.0", "0.1.0", false}, {"<=2.0.0", "3.0.0", false},
		{"<=2.0.0", "2.9999.9999", false}, {"<=2.0.0", "2.2.9", false}, {"<2.0.0", "2.9999.9999", false},
		{"<2.0.0", "2.2.9", false}, {">=0.1.97", "0.1.93", false}, {"0.1.20 || 1.2.4", "1.2.3", false},
		{">=0.2.3 || <0.0.1", "0.0.3", false}, {">=0.2.3 || <0.0.1", "0.2.2", false}, {"2.x.x", "1.1.3", false},
		{"2.x.x", "3.1.3", false}, {"1.2.x", "1.3.3", false}, {"1.2.x || 2.x", "3.1.3", false},
		{"1.2.x || 2.x", "1.1.3", false}, {"2.*.*", "1.1.3", false}, {"2.*.*", "3.1.3", false},
		{"1.2.*", "1.3.3", false}, {"1.2.* || 2.*", "3.1.3", false}, {"1.2.* || 2.*", "1.1.3", false},
		{"2", "1.1.2", false}, {"2.3", "2.4.1", false}, {"~0.0.1", "0.1.0-alpha", false}, {"~0.0.1", "0.1.0", false},
		{"~2.4", "2.5.0", false}, {"~2.4", "2.3.9", false}, {"~>3.2.1", "3.3.2", false}, {"~>3.2.1", "3.2.0", false},
		{"~1", "0.2.3", false}, {"~>1", "2.2.3", false}, {"~1.0", "1.1.0", false}, {"<1", "1.0.0", false},
		{">=1.2", "1.1.1", false}, {"~v0.5.4-beta", "0.5.4-alpha", false}, {"=0.7.x", "0.8.2", false},
		{">=0.7.x", "0.6.2", false}, {"<0.7.x", "0.7.2", false}, {"<1.2.3", "1.2.3-beta", false},
		{"=1.2.3", "1.2.3-beta", false}, {">1.2", "1.2.8", false}, {"^0.0.1", "0.0.2-alpha", false},
		{"^0.0.1", "0.0.2", false}, {"^1.2.3", "2.0.0-alpha", false}, {"^1.2.3", "1.2.2", false},
		{"^1.2", "1.1.9", false}, {"2.x", "3.0.0-pre.0", true}, {"^1.0.0", "1.0.0-rc1", true},
		{"^1.2.3-rc2", "2.0.0", true}, {"^1.0.0", "2.0.0-rc1", true}, {"^1.0.0", "2.0.0-rc1", false},
		// Masterminds/semver#180: ^0.0.1 matched 0.3.1 there; it must match only 0.0.1.
		{"^0.0.1", "0.3.1", false}, {"^0.0.1", "0.3.1", true}, {"^0.0.1", "0.1.1", false},
		// the issue: ^0.1.3 stops before 0.2.0 (and its pre-releases)
		{"^0.1.3", "0.2.0", false}, {"^0.1.3", "0.2.0-alpha", true},
		// a pre-release of another tuple needs includePrerelease
		{"^1.2.3-beta.1", "1.2.4-alpha", false},
	}
	for _, tt := range include {
		r := MustParseSemVerRange(tt.rng, tt.incPre)
		if !r.Contains(MustParseSemVer(tt.ver)) {
			t.Errorf("%q (includePrerelease %v, desugared %q) should contain %s", tt.rng, tt.incPre, r, tt.ver)
		}
	}
	for _, tt := range exclude {
		r := MustParseSemVerRange(tt.rng, tt.incPre)
		if r.Contains(MustParseSemVer(tt.ver)) {
			t.Errorf("%q (includePrerelease %v, desugared %q) should not contain %s", tt.rng, tt.incPre, r, tt.ver)
		}
	}
	// includePrerelease: ^1.2.3-beta.1 admits 1.2.4-alpha only with it.
	if !MustParseSemVerRange("^1.2.3-beta.1", true).Contains(MustParseSemVer("1.2.4-alpha")) {
		t.Error("^1.2.3-beta.1 with includePrerelease should contain 1.2.4-alpha")
	}
}

func TestSemVerRangeBounds(t *testing.T) {
	// Every version a range contains lies within its bounds: the invariant the resolver's
	// bounded scan relies on.
	ranges := []string{"^1.2.3", "^0.0.1", "^0.1", "~1.2", "1.x", "*", "", ">=1.2.3", "<2", "<=1.2.3-beta.2",
		"1.2.3 - 2.3.4", "1.2 - 2", "^1.2.3-beta.1", ">1.2 <1.5 || >=3.0.0", ">=1.0.0 || <0.5.0", "1.2.3",
		"=1.2.3 || 0.0.1", ">x", "<0.0.0-0 || 4.x", "~0.0.1", ">=0.7.x", "<=0.7.x", "2.x || ^0.9"}
	var versions []SemVer
	for _, s := range []string{"0.0.0", "0.0.1", "0.0.2-alpha", "0.1.0", "0.1.9", "0.4.0", "0.5.0", "0.6.2", "0.7.0-asdf", "0.7.2",
		"0.8.0", "0.9.1", "1.0.0", "1.2.0-pre", "1.2.2", "1.2.3-alpha", "1.2.3-beta.2", "1.2.3", "1.2.4", "1.3.0-beta",
		"1.4.9", "1.5.0", "1.9.9", "2.0.0-rc.1", "2.0.0", "2.3.4", "2.9.9", "3.0.0", "4.1.0", "9.9.9"} {
		versions = append(versions, MustParseSemVer(s))
	}
	for _, rs := range ranges {
		for _, incPre := range []bool{false, true} {
			r := MustParseSemVerRange(rs, incPre)
			lo, loOK, hi, hiOK := r.Bounds()
			for _, v := range versions {
				if !r.Contains(v) {
					continue
				}
				if loOK && v.Compare(lo) < 0 || hiOK && v.Compare(hi) > 0 {
					t.Errorf("%q (includePrerelease %v): %s is outside its bounds [%s, %s]", rs, incPre, v, lo, hi)
				}
			}
		}
	}
}
