package main

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sphttp "github.com/supplyplan/supplyplan/http"
	"github.com/supplyplan/supplyplan/internal/openapitest"
	"github.com/supplyplan/supplyplan/internal/testdeps"
)

// docExample is one curl call of a documentation page and the status it documents.
type docExample struct {
	line   int // 1-based line of the annotation in the page
	status string
}

// annotation is the trailing comment that documents a curl call's status: `# → 201`.
var annotation = regexp.MustCompile(`#\s*(?:→|->)\s*([1-5][0-9][0-9])\b`)

// exitAnnotation documents the exit status of a command of the binary: `# exit 1`.
var exitAnnotation = regexp.MustCompile(`#\s*exit\s+([0-9]+)\s*$`)

// docScript turns the ```bash blocks of a page into one script, in order. A line that sets one of
// bases' variables (`export U=...`: U is the API's base URL, C the loop catalog's) is replaced by
// the variable set to its value. A call of the binary (`bin/supplyplan ...  # exit 1`) runs
// through doc_exit, which checks the exit status it documents. It returns the script and the
// curl calls' annotations in order.
func docScript(tb testing.TB, page string, bases map[string]string) (string, []docExample) {
	tb.Helper()
	f, err := os.Open(page)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var script strings.Builder
	var examples []docExample
	calls := 0
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```bash":
			in = true
			continue
		case in && trimmed == "```":
			in = false
			continue
		case !in:
			continue
		}
		for name, base := range bases {
			if strings.HasPrefix(trimmed, "export "+name+"=") {
				line = "export " + name + "=" + base
			}
		}
		if strings.HasPrefix(trimmed, "bin/supplyplan ") {
			m := exitAnnotation.FindStringSubmatch(line)
			if m == nil {
				tb.Fatalf("%s:%d calls the binary without documenting its exit status (`# exit 0`)", page, n)
			}
			line = fmt.Sprintf("doc_exit %s %d %s", m[1], n, line)
		}
		calls += len(regexp.MustCompile(`(^|[\s($|])curl\s`).FindAllString(line, -1))
		for _, m := range annotation.FindAllStringSubmatch(line, -1) {
			examples = append(examples, docExample{line: n, status: m[1]})
		}
		fmt.Fprintf(&script, "%s\n", line)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	if calls != len(examples) {
		tb.Fatalf("%s has %d curl calls in its bash blocks but %d status annotations (`# → 201`): every call documents its status", page, calls, len(examples))
	}
	return script.String(), examples
}

// docPrelude wraps curl: each call takes the next documented status from $DOC_EXPECT (one
// "line status" per line; a counter file, so that calls inside $(...) count too), writes a
// failure to $DOC_FAILS when the status differs, and prints the body as curl would.
const docPrelude = `set -u -o pipefail
curl() {
	local n exp line body code meta
	n=$(( $(cat "$DOC_COUNTER") + 1 )); echo "$n" > "$DOC_COUNTER"
	read -r line exp <<<"$(sed -n "${n}p" "$DOC_EXPECT")"
	body=$(mktemp)
	meta=$(command curl -sS -o "$body" -w '%{http_code}\t%{method}\t%{content_type}\t%{url_effective}' --max-time 60 "$@") || true
	code=${meta%%$'\t'*}
	cp "$body" "$DOC_BODIES/$n"
	printf '%s\t%s\n' "$n" "$meta" >>"$DOC_LOG"
	if [ -z "$exp" ]; then
		echo "call $n (no documented status): got $code" >>"$DOC_FAILS"
	elif [ "$code" != "$exp" ]; then
		echo "docs line $line: documented $exp, got $code: $(head -c 400 "$body")" >>"$DOC_FAILS"
	fi
	cat "$body"; rm -f "$body"
}
doc_exit() {
	local want=$1 line=$2 got
	shift 2
	"$@"; got=$?
	if [ "$got" != "$want" ]; then
		echo "docs line $line: documented exit status $want, got $got" >>"$DOC_FAILS"
	fi
}
`

// TestAPIDocumentationRuns runs every request of docs/api.md, in order, against a fresh server,
// and checks the status each one documents: the examples are how a newcomer learns the API, so
// they must work as written on a new data dir.
func TestAPIDocumentationRuns(t *testing.T) {
	runDocPage(t, "../../docs/api.md", false)
}

// TestLoopCatalogDocumentationRuns does the same for the loop catalog's page, whose examples also
// run `bin/supplyplan loop verify`.
func TestLoopCatalogDocumentationRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	runDocPage(t, "../../docs/loop-catalog-api.md", true)
}

// runDocPage runs the examples of page against a fresh server (the defaults a newcomer runs with,
// on free ports), from a directory that holds its data dir as data/ and, with withBinary, the
// built binary as bin/supplyplan, as the repository's root does after `make run`.
func runDocPage(t *testing.T, page string, withBinary bool) {
	runDocPageOn(t, nil, page, withBinary, nil)
}

// runDocPageOn is runDocPage against s (nil: a fresh server), with more variables to set.
func runDocPageOn(t *testing.T, s *testServer, page string, withBinary bool, more map[string]string) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			testdeps.Missing(t, tool+" is not installed", "bash scripts/test-deps.sh")
		}
	}
	if s == nil {
		s = MustStart(t, "")
	}
	bases := map[string]string{"U": s.URL, "C": "http://" + s.Main.Loops.Addr()}
	for k, v := range more {
		bases[k] = v
	}
	script, examples := docScript(t, page, bases)

	dir := t.TempDir()
	// The examples read keys from data/credentials.json, as after `make run`.
	if err := os.Symlink(s.Data, filepath.Join(dir, "data")); err != nil {
		t.Fatal(err)
	}
	if withBinary {
		if err := os.Mkdir(filepath.Join(dir, "bin"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(mustBinary(t), filepath.Join(dir, "bin", "supplyplan")); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var exp strings.Builder
	for _, e := range examples {
		fmt.Fprintf(&exp, "%d %s\n", e.line, e.status)
	}
	expect := write("expect", exp.String())
	counter := write("counter", "0\n")
	fails := write("fails", "")
	calls := write("calls", "")
	bodies := filepath.Join(dir, "bodies")
	if err := os.Mkdir(bodies, 0o700); err != nil {
		t.Fatal(err)
	}
	prog := write("docs.sh", docPrelude+script)

	cmd := exec.Command("bash", prog)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DOC_EXPECT="+expect, "DOC_COUNTER="+counter, "DOC_FAILS="+fails,
		"DOC_LOG="+calls, "DOC_BODIES="+bodies)
	done := make(chan struct{})
	var out []byte
	var runErr error
	go func() { out, runErr = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the examples of %s did not finish in 5 minutes; output:\n%s", page, out)
	}
	if runErr != nil {
		t.Errorf("the examples of %s exited with %v; output:\n%s", page, runErr, out)
	}
	b, _ := os.ReadFile(counter)
	if got := strings.TrimSpace(string(b)); got != fmt.Sprint(len(examples)) {
		t.Errorf("%s of %d documented calls ran", got, len(examples))
	}
	if b, _ := os.ReadFile(fails); len(b) > 0 {
		t.Errorf("examples of %s that do not do what they document:\n%s", page, b)
	}
	docs := map[string][]byte{
		s.URL:                           sphttp.OpenAPIDocument(),
		"http://" + s.Main.Loops.Addr(): sphttp.LoopCatalogOpenAPIDocument(),
	}
	if s.Main.Runtime != nil {
		docs["http://"+s.Main.Runtime.Addr()] = sphttp.LoopRuntimeOpenAPIDocument()
	}
	validated := validateDocResponses(t, calls, bodies, docs)
	t.Logf("%d of the %d responses of %s validated against the OpenAPI documents", validated, len(examples), page)
	if validated < len(examples)/2 {
		t.Errorf("only %d of the %d calls of %s were checked against the OpenAPI documents", validated, len(examples), page)
	}
}

// validateDocResponses checks every response the examples got against the OpenAPI document of
// the server they called (docs by base URL): its status must be documented for the operation, and
// a JSON body must validate against the documented schema. It returns how many were checked.
func validateDocResponses(t *testing.T, calls, bodies string, docs map[string][]byte) int {
	t.Helper()
	parsed := map[string]*openapitest.Document{}
	for base, doc := range docs {
		d, err := openapitest.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		parsed[base] = d
	}
	log, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			continue
		}
		call, code, method, ct, rawURL := f[0], f[1], f[2], f[3], f[4]
		status, err := strconv.Atoi(code)
		if err != nil || status == 0 {
			continue // no response (the example documents a refused connection)
		}
		for base, d := range parsed {
			if !strings.HasPrefix(rawURL, base+"/") {
				continue
			}
			u, err := url.Parse(rawURL)
			if err != nil {
				t.Fatal(err)
			}
			body, err := os.ReadFile(filepath.Join(bodies, call))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(string(body), "HTTP/") { // curl -i: the headers come first
				if _, b, ok := strings.Cut(string(body), "\r\n\r\n"); ok {
					body = []byte(b)
				}
			}
			if err := d.ValidateResponse(method, u.Path, status, ct, body); err != nil {
				t.Errorf("call %s (%s %s): the response does not match the OpenAPI document: %v\nbody: %.400s", call, method, u.Path, err, body)
			}
			n++
		}
	}
	return n
}
