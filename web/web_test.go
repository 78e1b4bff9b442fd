package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"strings"
	"testing"
)

// TestVendoredChecksums: every vendored file matches web/static/vendor/SHA256SUMS, and every file
// of the vendor folder is listed there.
func TestVendoredChecksums(t *testing.T) {
	st := Static()
	sums, err := fs.ReadFile(st, "vendor/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		b, err := fs.ReadFile(st, "vendor/"+name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, want %s", name, got, want)
		}
		listed[name] = true
	}
	if len(listed) < 5 {
		t.Fatalf("%d files listed", len(listed))
	}
	err = fs.WalkDir(st, "vendor", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimPrefix(p, "vendor/")
		if name != "SHA256SUMS" && name != "README.md" && !listed[name] {
			t.Errorf("%s is not in SHA256SUMS", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, lic := range []string{"vendor/htmx/LICENSE", "vendor/uplot/LICENSE"} {
		if _, err := fs.Stat(st, lic); err != nil {
			t.Errorf("license %s: %v", lic, err)
		}
	}
}

// TestNoInlineScripts: the templates carry no inline script, event handler attribute or style
// attribute, which the console's Content-Security-Policy would block.
func TestNoInlineScripts(t *testing.T) {
	tfs := Templates()
	names, err := fs.Glob(tfs, "*.html")
	if err != nil || len(names) < 10 {
		t.Fatalf("templates %v: %v", names, err)
	}
	for _, n := range names {
		b, err := fs.ReadFile(tfs, n)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ToLower(string(b))
		for _, bad := range []string{"<script>", " onclick=", " onsubmit=", " onload=", " style=", "<style", "javascript:", "hx-on"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", n, bad)
			}
		}
		if strings.Count(s, "<script") != strings.Count(s, `<script src="/static/`) {
			t.Errorf("%s has a script that is not a /static/ file", n)
		}
	}
}
