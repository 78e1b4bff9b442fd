package supplyplan

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRootImportsOnlyTheStandardLibrary: the domain depends on nothing but the standard library,
// so that every rule can be used and tested without an adapter (docs/architecture.md). Wire
// decoding lives in internal/ packages that import this one, never the other way round. Every
// non-test file counts, whatever its build constraints.
func TestRootImportsOnlyTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !standard(path) {
				t.Errorf("%s imports %s: the root package imports only the standard library", name, path)
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d files: not the root package's directory?", checked)
	}
}

// standard reports whether path is a standard library package: as the go command decides it, no
// dot in the first path element (and not cgo's "C").
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return path != "C" && !strings.Contains(first, ".")
}

func TestStandard(t *testing.T) {
	for path, want := range map[string]bool{"fmt": true, "encoding/json": true, "unicode/utf8": true,
		"github.com/supplyplan/supplyplan/internal/jsonscan": false, "golang.org/x/text/unicode/norm": false, "C": false} {
		if got := standard(path); got != want {
			t.Errorf("standard(%q) = %v, want %v", path, got, want)
		}
	}
}
