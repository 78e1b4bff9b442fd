package supplyplan

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var loopT0 = time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)

func mustLoopSigner(tb testing.TB) *LoopSigner {
	tb.Helper()
	key, err := GenerateLoopSigningKey()
	if err != nil {
		tb.Fatal(err)
	}
	s, err := NewLoopSigner(key)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// catalogFixture drives a LoopCatalogState the way its actor will: every change's records go
// through the journal encoding before they are applied.
type catalogFixture struct {
	tb     testing.TB
	s      *LoopCatalogState
	signer *LoopSigner
	now    time.Time
}

func newCatalogFixture(tb testing.TB, scope string) *catalogFixture {
	return &catalogFixture{tb: tb, s: NewLoopCatalogState(scope), signer: mustLoopSigner(tb), now: loopT0}
}

func (f *catalogFixture) apply(recs []Record) {
	f.tb.Helper()
	if len(recs) == 0 {
		return
	}
	b, err := EncodeRecords(recs)
	if err != nil {
		f.tb.Fatal(err)
	}
	decoded, err := DecodeRecords(b)
	if err != nil {
		f.tb.Fatal(err)
	}
	for _, r := range decoded {
		if err := f.s.Apply(r); err != nil {
			f.tb.Fatal(err)
		}
	}
}

// loopManifest is issueManifest renamed, with edit applied.
func loopManifest(tb testing.TB, name, version string, edit func(m map[string]any)) []byte {
	tb.Helper()
	return manifestWith(tb, func(m map[string]any) {
		m["name"], m["version"] = name, version
		if edit != nil {
			edit(m)
		}
	})
}

func (f *catalogFixture) publishBytes(name, version string, manifest []byte) (LoopPublishResult, error) {
	f.tb.Helper()
	res, recs, err := f.s.Publish(LoopPublishRequest{Name: name, Version: version, Manifest: manifest, Publisher: "apikey:key_admin"}, f.signer, f.now)
	if err == nil {
		f.apply(recs)
	}
	return res, err
}

func (f *catalogFixture) publish(name, version string, edit func(m map[string]any)) (LoopPublishResult, error) {
	f.tb.Helper()
	return f.publishBytes(name, version, loopManifest(f.tb, name, version, edit))
}

func (f *catalogFixture) mustPublish(name, version string, edit func(m map[string]any)) LoopVersion {
	f.tb.Helper()
	res, err := f.publish(name, version, edit)
	if err != nil {
		f.tb.Fatalf("publish %s@%s: %v", name, version, err)
	}
	return res.Version
}

func wantCode(tb testing.TB, what string, err error, code string) *Error {
	tb.Helper()
	if ErrorCode(err) != code {
		tb.Fatalf("%s: got %v, want %s", what, err, code)
	}
	e, _ := err.(*Error)
	return e
}

func TestLoopPublishIdempotencyAndConflicts(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	first, err := f.publishBytes("acme/restock", "1.0.0", []byte(strings.Replace(issueManifest, "acme/restock", "acme/restock", 1)))
	if err != nil {
		t.Fatal(err)
	}
	v := first.Version
	if !first.Created || v.State != LoopPublished || !strings.HasPrefix(v.Digest, "sha256:") || !strings.HasPrefix(v.Integrity, "sha512-") ||
		len(v.Signatures) != 1 || v.Signatures[0].KeyID != f.signer.KeyID() || v.Publisher != "apikey:key_admin" || !v.PublishedAt.Equal(loopT0) {
		t.Fatalf("first publish = %+v", first)
	}
	// The stored blob is the canonical form and verifies against the version's dist.
	blob, ok := f.s.Blob(v.Digest)
	if !ok {
		t.Fatal("blob missing")
	}
	if res, err := VerifyLoopManifest(blob, v.LoopDist, JWKS{Keys: []JWK{f.signer.PublicJWK()}}); err != nil || !res.Canonical {
		t.Fatalf("verify the stored blob: %+v %v", res, err)
	}

	// The same bytes, and the same content reformatted: 200, nothing written.
	for name, body := range map[string][]byte{
		"same bytes":  []byte(issueManifest),
		"reformatted": prettyReordered(t, issueManifest),
	} {
		res, recs, err := f.s.Publish(LoopPublishRequest{Name: "acme/restock", Version: "1.0.0", Manifest: body, Publisher: "other"}, f.signer, f.now.Add(time.Hour))
		if err != nil || res.Created || len(recs) != 0 || res.Version.Digest != v.Digest || res.Version.Publisher != "apikey:key_admin" {
			t.Errorf("%s: %+v, %d records, %v", name, res, len(recs), err)
		}
	}

	// Other content under the same version: 409 VERSION_EXISTS.
	_, err = f.publish("acme/restock", "1.0.0", func(m map[string]any) { m["description"] = "changed" })
	e := wantCode(t, "other content", err, EVERSIONEXISTS)
	if !strings.Contains(e.Message, v.Digest) {
		t.Errorf("message should name the stored digest: %s", e.Message)
	}
	// Build metadata does not make a new version.
	_, err = f.publish("acme/restock", "1.0.0+build.7", nil)
	wantCode(t, "build metadata", err, EVERSIONEXISTS)

	// Path and manifest must agree.
	_, err = f.publishBytes("acme/restock", "1.0.1", loopManifest(t, "acme/restock", "1.0.2", nil))
	if e := wantCode(t, "version mismatch", err, EVALIDATION); len(e.Details["version"]) == 0 {
		t.Errorf("details %v", e.Details)
	}
	_, err = f.publishBytes("acme/restock", "1.0.1", loopManifest(t, "acme/other", "1.0.1", nil))
	if e := wantCode(t, "name mismatch", err, EVALIDATION); len(e.Details["name"]) == 0 {
		t.Errorf("details %v", e.Details)
	}
	// Invalid manifests name the path.
	_, err = f.publish("acme/restock", "1.0.1", func(m map[string]any) { transition(m, 2)["from"] = []any{"draft", "nowhere"} })
	if e := wantCode(t, "invalid manifest", err, EVALIDATION); len(e.Details["transitions[2].from[1]"]) == 0 {
		t.Errorf("details %v", e.Details)
	}
	_, err = f.publishBytes("acme/restock", "1.0.1", []byte(`{"name":`))
	wantCode(t, "not JSON", err, EVALIDATION)
	_, err = f.publishBytes("acme/restock", "1.0.1", make([]byte, MaxLoopManifestBytes+1))
	wantCode(t, "too large", err, ETOOLARGE)
	_, err = f.publish("acme/restock", "1.0", nil)
	if e := wantCode(t, "bad version", err, EVALIDATION); len(e.Details["version"]) == 0 {
		t.Errorf("details %v", e.Details)
	}
	_, err = f.publish("acme/Restock", "1.0.1", nil)
	wantCode(t, "bad name", err, EVALIDATION)
	// Nothing of the failed attempts was written.
	doc, err := f.s.Loop("acme/restock")
	if err != nil || len(doc.Versions) != 1 {
		t.Fatalf("document after failures: %+v %v", doc, err)
	}
	// A second version publishes normally.
	if res, err := f.publish("acme/restock", "1.0.1", nil); err != nil || !res.Created {
		t.Fatalf("1.0.1: %+v %v", res, err)
	}
}

// prettyReordered re-encodes a JSON document indented and with every object's keys in reverse
// order: the same content in other bytes.
func prettyReordered(tb testing.TB, doc string) []byte {
	tb.Helper()
	v, err := decodeJSONValue([]byte(doc))
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	var write func(v any, indent string)
	write = func(v any, indent string) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			slices.Reverse(keys)
			b.WriteString("{\n")
			for i, k := range keys {
				kb, _ := json.Marshal(k)
				b.WriteString(indent + "  " + string(kb) + " : ")
				write(x[k], indent+"  ")
				if i < len(keys)-1 {
					b.WriteString(",")
				}
				b.WriteString("\n")
			}
			b.WriteString(indent + "}")
		case []any:
			b.WriteString("[ ")
			for i, e := range x {
				if i > 0 {
					b.WriteString(" , ")
				}
				write(e, indent)
			}
			b.WriteString(" ]")
		default:
			vb, _ := json.Marshal(x)
			b.Write(vb)
		}
	}
	write(v, "")
	return []byte(b.String())
}

func TestLoopLatestAndDistTags(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	name := "acme/restock"
	latest := func() string {
		t.Helper()
		doc, err := f.s.Loop(name)
		if err != nil {
			t.Fatal(err)
		}
		return doc.DistTags[LatestTag]
	}
	f.mustPublish(name, "1.0.0", nil)
	if got := latest(); got != "1.0.0" {
		t.Fatalf("latest after the first release = %q", got)
	}
	f.mustPublish(name, "1.1.0-beta.1", nil)
	if got := latest(); got != "1.0.0" {
		t.Fatalf("a pre-release moved latest to %q", got)
	}
	f.mustPublish(name, "1.1.0", nil)
	f.mustPublish(name, "1.0.5", nil) // a back-filled patch is not higher
	if got := latest(); got != "1.1.0" {
		t.Fatalf("latest = %q, want 1.1.0", got)
	}

	// Tags: set, no-op, rollback of latest, then a higher publish moves it again.
	set := func(tag, version string) (map[string]string, []Record, error) {
		f.now = f.now.Add(time.Minute)
		tags, recs, err := f.s.SetDistTag(name, tag, version, "apikey:key_admin", f.now)
		if err == nil {
			f.apply(recs)
		}
		return tags, recs, err
	}
	if tags, recs, err := set("next", "1.1.0-beta.1"); err != nil || tags["next"] != "1.1.0-beta.1" || len(recs) == 0 {
		t.Fatalf("set next: %v %v", tags, err)
	}
	if _, recs, err := set("next", "1.1.0-beta.1"); err != nil || len(recs) != 0 {
		t.Fatalf("setting a tag to its version again should write nothing: %d records, %v", len(recs), err)
	}
	if _, _, err := set(LatestTag, "1.0.5"); err != nil {
		t.Fatal(err)
	}
	if r, err := f.s.Resolve(name, "latest", false); err != nil || r.Version != "1.0.5" || r.Tag != "latest" {
		t.Fatalf("resolve latest: %+v %v", r, err)
	}
	f.mustPublish(name, "1.2.0", nil)
	if got := latest(); got != "1.2.0" {
		t.Fatalf("latest after 1.2.0 = %q", got)
	}

	for _, tag := range []string{"", "x", "v1", "1.2", "Beta", "-x", strings.Repeat("a", MaxLoopTagLength+1), "a b"} {
		_, _, err := set(tag, "1.0.0")
		wantCode(t, "tag "+tag, err, EVALIDATION)
	}
	_, _, err := set("stable", "9.9.9")
	wantCode(t, "tag to a missing version", err, ENOTFOUND)
	_, _, err = f.s.RemoveDistTag(name, LatestTag, "a", f.now)
	wantCode(t, "remove latest", err, ECONFLICT)
	_, _, err = f.s.RemoveDistTag(name, "nope", "a", f.now)
	wantCode(t, "remove a missing tag", err, ENOTFOUND)
	tags, recs, err := f.s.RemoveDistTag(name, "next", "apikey:key_admin", f.now)
	if err != nil || tags["next"] != "" {
		t.Fatalf("remove next: %v %v", tags, err)
	}
	f.apply(recs)

	// Every change is audited, newest first, with the tag's previous version.
	page, err := f.s.LoopAudit(name, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range page.Items {
		got = append(got, fmt.Sprintf("%s %s %s<-%s by %s", e.Action, e.Tag, e.Version, e.From, e.Actor))
	}
	want := []string{
		"dist-tag.remove next <-1.1.0-beta.1 by apikey:key_admin",
		"dist-tag.set latest 1.2.0<-1.0.5 by apikey:key_admin (automatic)",
		"publish  1.2.0<- by apikey:key_admin",
		"dist-tag.set latest 1.0.5<-1.1.0 by apikey:key_admin",
		"dist-tag.set next 1.1.0-beta.1<- by apikey:key_admin",
		"publish  1.0.5<- by apikey:key_admin",
		"dist-tag.set latest 1.1.0<-1.0.0 by apikey:key_admin (automatic)",
		"publish  1.1.0<- by apikey:key_admin",
		"publish  1.1.0-beta.1<- by apikey:key_admin",
		"dist-tag.set latest 1.0.0<- by apikey:key_admin (automatic)",
		"publish  1.0.0<- by apikey:key_admin",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p2, _ := f.s.LoopAudit(name, 2, 1); len(p2.Items) != 2 || p2.Total != len(want) || p2.Items[0].Action != LoopActionTagSet {
		t.Errorf("audit page = %+v", p2)
	}
}

func TestLoopDeprecateYankResolution(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	name := "acme/restock"
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0-rc.1", "2.0.0"} {
		f.mustPublish(name, v, nil)
	}
	resolve := func(spec string, incPre bool) LoopResolution {
		t.Helper()
		r, err := f.s.Resolve(name, spec, incPre)
		if err != nil {
			t.Fatalf("resolve %q: %v", spec, err)
		}
		return r
	}
	check := func(spec string, incPre bool, want string, candidates ...string) {
		t.Helper()
		r := resolve(spec, incPre)
		if r.Version != want || strings.Join(r.Candidates, ",") != strings.Join(candidates, ",") {
			t.Errorf("resolve %q: %s %v, want %s %v", spec, r.Version, r.Candidates, want, candidates)
		}
		v, _ := f.s.Version(name, r.Version)
		if r.Digest != v.Digest || r.Integrity != v.Integrity {
			t.Errorf("resolve %q: digest/integrity of another version", spec)
		}
	}
	check("^1", false, "1.2.0", "1.2.0", "1.1.0", "1.0.0")
	check("^1.1", false, "1.2.0", "1.2.0", "1.1.0")
	check("~1.1.0", false, "1.1.0", "1.1.0")
	check("^2.0.0-rc.1", false, "2.0.0", "2.0.0", "2.0.0-rc.1")
	check(">=2.0.0-rc.0 <2.0.0", false, "2.0.0-rc.1", "2.0.0-rc.1")
	check("^2", false, "2.0.0", "2.0.0")
	check("<2.0.0", true, "2.0.0-rc.1", "2.0.0-rc.1", "1.2.0", "1.1.0", "1.0.0")
	check("*", false, "2.0.0", "2.0.0", "1.2.0", "1.1.0", "1.0.0")
	if r := resolve("^1", false); r.Range != ">=1.0.0 <2.0.0-0" || r.Deprecated != nil {
		t.Errorf("range echo / deprecated: %+v", r)
	}

	// Deprecate 1.2.0: ranges prefer the highest version that is not deprecated; an exact
	// range still gets it, with the message.
	dep := func(version, msg string) LoopVersion {
		t.Helper()
		f.now = f.now.Add(time.Minute)
		v, recs, err := f.s.Deprecate(name, version, msg, "apikey:key_admin", f.now)
		if err != nil {
			t.Fatal(err)
		}
		f.apply(recs)
		return v
	}
	if v := dep("1.2.0", "use 1.1.0: 1.2.0 loses receipts"); v.State != LoopDeprecated || *v.Deprecated == "" {
		t.Fatalf("deprecated = %+v", v)
	}
	check("^1", false, "1.1.0", "1.2.0", "1.1.0", "1.0.0")
	if r := resolve("1.2.0", false); r.Version != "1.2.0" || r.Deprecated == nil || *r.Deprecated != "use 1.1.0: 1.2.0 loses receipts" {
		t.Errorf("exact deprecated resolution = %+v", r)
	}
	if v := dep("1.2.0", ""); v.State != LoopPublished || v.Deprecated != nil {
		t.Fatalf("un-deprecated = %+v", v)
	}
	check("^1", false, "1.2.0", "1.2.0", "1.1.0", "1.0.0")
	_, _, err := f.s.Deprecate(name, "1.2.0", strings.Repeat("x", MaxLoopMessage+1), "a", f.now)
	wantCode(t, "long message", err, EVALIDATION)

	// Yank 1.2.0: no range chooses it, exact fetches still work.
	yank := func(version, reason string) LoopVersion {
		t.Helper()
		f.now = f.now.Add(time.Minute)
		v, recs, err := f.s.Yank(name, version, reason, "apikey:key_admin", f.now)
		if err != nil {
			t.Fatal(err)
		}
		f.apply(recs)
		return v
	}
	if v := yank("1.2.0", "breaks receipts"); v.State != LoopYanked || !v.Yanked || v.YankReason != "breaks receipts" {
		t.Fatalf("yanked = %+v", v)
	}
	check("^1", false, "1.1.0", "1.1.0", "1.0.0")
	_, err = f.s.Resolve(name, "1.2.0", false)
	wantCode(t, "resolve a yanked exact version", err, ENOTFOUND)
	if v, err := f.s.Version(name, "1.2.0"); err != nil || v.State != LoopYanked {
		t.Fatalf("fetch yanked: %+v %v", v, err)
	} else if _, ok := f.s.Blob(v.Digest); !ok {
		t.Fatal("a yanked version's blob must stay fetchable")
	}
	_, _, err = f.s.SetDistTag(name, "stable", "1.2.0", "a", f.now)
	wantCode(t, "tag a yanked version", err, ECONFLICT)

	// Yanking latest moves it to the highest installable release; unyank moves it back.
	yank("2.0.0", "")
	if r := resolve("latest", false); r.Version != "1.1.0" {
		t.Fatalf("latest after yanking 2.0.0 = %s", r.Version)
	}
	check("^2.0.0-rc.1", false, "2.0.0-rc.1", "2.0.0-rc.1")
	f.now = f.now.Add(time.Minute)
	v, recs, err := f.s.Unyank(name, "2.0.0", "apikey:key_admin", f.now)
	if err != nil || v.State != LoopPublished {
		t.Fatalf("unyank: %+v %v", v, err)
	}
	f.apply(recs)
	if r := resolve("latest", false); r.Version != "2.0.0" {
		t.Fatalf("latest after unyank = %s", r.Version)
	}
	if _, recs, _ := f.s.Unyank(name, "2.0.0", "a", f.now); len(recs) != 0 {
		t.Error("unyanking a version that is not yanked should write nothing")
	}

	// Every satisfying version deprecated: the highest one, with its message.
	dep("1.1.0", "old")
	dep("1.0.0", "older")
	if r := resolve("^1", false); r.Version != "1.1.0" || r.Deprecated == nil || *r.Deprecated != "old" {
		t.Errorf("all deprecated: %+v", r)
	}

	_, err = f.s.Resolve(name, "^3", false)
	wantCode(t, "nothing satisfies", err, ENOTFOUND)
	if r := resolve("", false); r.Version != "2.0.0" || r.Tag != LatestTag {
		t.Errorf("an empty range resolves latest: %+v", r)
	}
	_, err = f.s.Resolve(name, "beta", false)
	wantCode(t, "a missing dist-tag", err, ENOTFOUND)
	f.mustPublish("acme/preview", "0.1.0-alpha.1", nil)
	if _, err := f.s.Resolve("acme/preview", "", false); ErrorCode(err) != ENOTFOUND {
		t.Errorf("only a pre-release and no latest: %v", err)
	}
	if r, err := f.s.Resolve("acme/preview", "", true); err != nil || r.Version != "0.1.0-alpha.1" {
		t.Errorf("only a pre-release, includePrerelease: %+v %v", r, err)
	}
	_, err = f.s.Resolve(name, "not a range", false)
	if e := wantCode(t, "bad range", err, EVALIDATION); len(e.Details["range"]) == 0 {
		t.Errorf("details %v", e.Details)
	}
	_, err = f.s.Resolve("acme/missing", "^1", false)
	wantCode(t, "missing loop", err, ENOTFOUND)
}

func TestLoopRemoveWindowAndReferences(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	name := "acme/restock"
	f.mustPublish(name, "1.0.0", nil)
	v1 := f.mustPublish(name, "1.1.0", nil)
	never := func(LoopVersion) bool { return false }

	_, _, err := f.s.Remove(name, "1.1.0", never, "a", loopT0.Add(LoopDeleteWindow+time.Second))
	wantCode(t, "after 72 hours", err, ECONFLICT)
	var asked LoopVersion
	_, _, err = f.s.Remove(name, "1.1.0", func(v LoopVersion) bool { asked = v; return true }, "a", loopT0.Add(time.Hour))
	wantCode(t, "referenced", err, ECONFLICT)
	if asked.Digest != v1.Digest {
		t.Errorf("the predicate was asked about %+v", asked)
	}

	removed, recs, err := f.s.Remove(name, "1.1.0", never, "apikey:key_admin", loopT0.Add(LoopDeleteWindow))
	if err != nil || removed.State != LoopRemoved || removed.RemovedAt == nil {
		t.Fatalf("remove at the end of the window: %+v %v", removed, err)
	}
	f.apply(recs)
	if _, ok := f.s.Blob(v1.Digest); ok {
		t.Error("the removed version's blob is still stored")
	}
	_, err = f.s.Version(name, "1.1.0")
	wantCode(t, "fetch removed", err, ENOTFOUND)
	if r, err := f.s.Resolve(name, "latest", false); err != nil || r.Version != "1.0.0" {
		t.Errorf("latest after removing 1.1.0: %+v %v", r, err)
	}
	// The number stays taken, even for the very same content.
	_, err = f.publishBytes(name, "1.1.0", loopManifest(t, name, "1.1.0", nil))
	wantCode(t, "republish removed", err, EVERSIONEXISTS)
	doc, _ := f.s.Loop(name)
	if len(doc.Versions) != 2 || doc.Versions[0].State != LoopRemoved {
		t.Errorf("document = %+v", doc.Versions)
	}
	_, _, err = f.s.Remove(name, "1.1.0", never, "a", loopT0)
	wantCode(t, "remove twice", err, ENOTFOUND)

	// Removing the only version leaves no latest and hides the loop from listings.
	_, recs, err = f.s.Remove(name, "1.0.0", never, "a", loopT0)
	if err != nil {
		t.Fatal(err)
	}
	f.apply(recs)
	if doc, _ := f.s.Loop(name); len(doc.DistTags) != 0 {
		t.Errorf("tags after removing everything: %v", doc.DistTags)
	}
	if got := f.s.LoopSummaries(LoopFilter{}); len(got) != 0 {
		t.Errorf("listing shows a loop without versions: %+v", got)
	}
}

func TestLoopBreakingChange(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	name := "acme/restock"
	f.mustPublish(name, "1.0.0", nil)

	withoutState := func(m map[string]any) { // drop "approved" and what leads to it
		m["states"] = []any{"draft", "submitted", "cancelled"}
		m["terminal"] = []any{"cancelled"}
		m["transitions"] = []any{m["transitions"].([]any)[0], m["transitions"].([]any)[2]}
	}
	_, err := f.publish(name, "1.1.0", withoutState)
	e := wantCode(t, "minor removing a state", err, EBREAKINGCHANGE)
	if strings.Join(e.Details["states"], ",") != "approved" || strings.Join(e.Details["transitions"], ",") != "approve" ||
		!strings.Contains(e.Message, "2.0.0") || !strings.Contains(e.Message, "1.0.0") {
		t.Errorf("breaking change = %s %v", e.Message, e.Details)
	}
	_, err = f.publish(name, "1.0.1", func(m map[string]any) {
		transition(m, 2)["from"] = []any{"draft"}
		delete(m, "timeouts") // its timeout fires cancel from submitted
	})
	if e := wantCode(t, "patch narrowing a transition", err, EBREAKINGCHANGE); strings.Join(e.Details["transitions.cancel.from"], ",") != "submitted" {
		t.Errorf("details %v", e.Details)
	}
	_, err = f.publish(name, "1.0.1", func(m map[string]any) {
		transition(m, 1)["to"] = "cancelled"
		m["transitions"] = append(m["transitions"].([]any), map[string]any{"name": "finalize", "from": []any{"submitted"}, "to": "approved"})
	})
	if e := wantCode(t, "patch retargeting a transition", err, EBREAKINGCHANGE); len(e.Details["transitions.approve.to"]) == 0 {
		t.Errorf("details %v", e.Details)
	}
	// A new major may remove; a pre-release is not checked; additions are fine.
	f.mustPublish(name, "2.0.0", withoutState)
	f.mustPublish(name, "1.1.0-beta.1", withoutState)
	addState := func(m map[string]any) {
		m["states"] = append(m["states"].([]any), "on_hold")
		m["transitions"] = append(m["transitions"].([]any),
			map[string]any{"name": "hold", "from": []any{"submitted"}, "to": "on_hold"},
			map[string]any{"name": "resume", "from": []any{"on_hold"}, "to": "submitted"})
	}
	f.mustPublish(name, "1.1.0", addState)
	// 1.2.0 must keep on_hold (1.1.0 is now the previous release).
	_, err = f.publish(name, "1.2.0", nil)
	if e := wantCode(t, "dropping what 1.1.0 added", err, EBREAKINGCHANGE); strings.Join(e.Details["states"], ",") != "on_hold" {
		t.Errorf("details %v", e.Details)
	}
	// A back-filled patch may not add what the next release lacks.
	_, err = f.publish(name, "1.0.1", func(m map[string]any) {
		m["states"] = append(m["states"].([]any), "escalated")
		m["transitions"] = append(m["transitions"].([]any),
			map[string]any{"name": "escalate", "from": []any{"submitted"}, "to": "escalated"},
			map[string]any{"name": "decide", "from": []any{"escalated"}, "to": "approved"})
	})
	if e := wantCode(t, "back-fill against the next release", err, EBREAKINGCHANGE); strings.Join(e.Details["states"], ",") != "escalated" ||
		!strings.Contains(e.Message, "later release") {
		t.Errorf("back-fill: %v", err)
	}
	// A yanked release is not the contract: after yanking 1.1.0, 1.2.0 compares with 1.0.0.
	_, recs, err := f.s.Yank(name, "1.1.0", "hold was a mistake", "a", f.now)
	if err != nil {
		t.Fatal(err)
	}
	f.apply(recs)
	f.mustPublish(name, "1.2.0", nil)

	// 0.x: the caret group is the minor; 0.0.z releases stand alone.
	f.mustPublish("acme/early", "0.1.0", nil)
	_, err = f.publish("acme/early", "0.1.1", withoutState)
	wantCode(t, "0.1.1 removing", err, EBREAKINGCHANGE)
	f.mustPublish("acme/early", "0.2.0", withoutState)
	f.mustPublish("acme/tiny", "0.0.1", nil)
	f.mustPublish("acme/tiny", "0.0.2", withoutState)
}

func TestLoopIsolation(t *testing.T) {
	acme := newCatalogFixture(t, "acme")
	beta := newCatalogFixture(t, "beta")
	global := newCatalogFixture(t, GlobalLoopScope)
	v := acme.mustPublish("acme/restock", "1.0.0", nil)
	beta.mustPublish("beta/restock", "1.0.0", nil)
	global.mustPublish("supplyplan/shared", "1.0.0", nil)

	// A state never holds another scope's names.
	_, err := acme.publish("beta/intruder", "1.0.0", nil)
	wantCode(t, "publish into another scope", err, ENOTFOUND)
	for what, err := range map[string]error{
		"resolve":  func() error { _, err := beta.s.Resolve("acme/restock", "^1", false); return err }(),
		"version":  func() error { _, err := beta.s.Version("acme/restock", "1.0.0"); return err }(),
		"document": func() error { _, err := beta.s.Loop("acme/restock"); return err }(),
		"tag":      func() error { _, _, err := beta.s.SetDistTag("acme/restock", "x1", "1.0.0", "a", loopT0); return err }(),
		"yank":     func() error { _, _, err := beta.s.Yank("acme/restock", "1.0.0", "", "a", loopT0); return err }(),
	} {
		wantCode(t, what+" of another organization's loop", err, ENOTFOUND)
	}
	if _, ok := beta.s.Blob(v.Digest); ok {
		t.Error("another organization's blob is fetchable")
	}

	// Access rules by caller.
	betaAdmin := LoopCaller{OrgSlug: "beta", Role: RoleAdmin}
	acmePlanner := LoopCaller{OrgSlug: "acme", Role: RolePlanner}
	platform := LoopCaller{Platform: true}
	// An organization that got the reserved slug before it was reserved has no loops of its own.
	squatter := LoopCaller{OrgID: "org_old", OrgSlug: GlobalLoopScope, Role: RoleAdmin}
	checks := []struct {
		what string
		err  error
		code string
	}{
		{"beta reads acme", betaAdmin.CheckRead("acme"), ENOTFOUND},
		{"beta writes acme", betaAdmin.CheckWrite("acme"), ENOTFOUND},
		{"beta reads global", betaAdmin.CheckRead(GlobalLoopScope), ""},
		{"beta writes global", betaAdmin.CheckWrite(GlobalLoopScope), EFORBIDDEN},
		{"beta writes beta", betaAdmin.CheckWrite("beta"), ""},
		{"acme planner reads acme", acmePlanner.CheckRead("acme"), ""},
		{"acme planner writes acme", acmePlanner.CheckWrite("acme"), EFORBIDDEN},
		{"platform writes global", platform.CheckWrite(GlobalLoopScope), ""},
		{"platform reads acme", platform.CheckRead("acme"), ETENANTREQUIRED},
		{"platform writes acme", platform.CheckWrite("acme"), ETENANTREQUIRED},
		{"squatter reads global", squatter.CheckRead(GlobalLoopScope), ""},
		{"squatter writes global", squatter.CheckWrite(GlobalLoopScope), EFORBIDDEN},
	}
	for _, c := range checks {
		if ErrorCode(c.err) != c.code {
			t.Errorf("%s: got %v, want %q", c.what, c.err, c.code)
		}
	}

	// A listing merges the caller's readable scopes only.
	lists := map[string][]LoopSummary{
		"acme": acme.s.LoopSummaries(LoopFilter{}), "beta": beta.s.LoopSummaries(LoopFilter{}),
		GlobalLoopScope: global.s.LoopSummaries(LoopFilter{}),
	}
	var mine [][]LoopSummary
	for _, scope := range betaAdmin.ReadableScopes() {
		mine = append(mine, lists[scope])
	}
	page := PageLoopSummaries(LoopFilter{}, mine...)
	var names []string
	for _, s := range page.Items {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "beta/restock,supplyplan/shared" {
		t.Errorf("beta's listing = %v", names)
	}
	for _, c := range []LoopCaller{platform, squatter} {
		if got := c.ReadableScopes(); len(got) != 1 || got[0] != GlobalLoopScope {
			t.Errorf("%+v: scopes = %v", c, got)
		}
	}
	if got, want := LoopCallerOf(Principal{KeyID: "key_1", OrgID: "org_1", Role: RoleViewer}, Organization{ID: "org_1", Slug: "acme"}),
		(LoopCaller{OrgID: "org_1", OrgSlug: "acme", Role: RoleViewer, KeyID: "key_1"}); got != want {
		t.Errorf("LoopCallerOf = %+v, want %+v", got, want)
	}
	if got := LoopCallerOf(Principal{KeyID: "key_p", Platform: true}, Organization{}); !got.Platform || got.Actor() != "platform:apikey:key_p" {
		t.Errorf("platform caller = %+v (%s)", got, got.Actor())
	}
}

func TestLoopListing(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	f.mustPublish("acme/restock", "1.0.0", nil)
	f.mustPublish("acme/returns-eu", "1.0.0", func(m map[string]any) {
		m["domain"], m["description"], m["keywords"] = "RETURNS", "EU returns with customs", []any{"customs", "eu"}
	})
	f.mustPublish("acme/audit", "0.1.0", func(m map[string]any) { m["domain"], m["description"] = "CUSTOM", "Audit trail" })
	f.mustPublish("acme/gone", "1.0.0", nil)
	_, recs, err := f.s.Remove("acme/gone", "1.0.0", nil, "a", loopT0)
	if err != nil {
		t.Fatal(err)
	}
	f.apply(recs)

	names := func(filter LoopFilter) string {
		t.Helper()
		if err := filter.Validate(); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range PageLoopSummaries(filter, f.s.LoopSummaries(filter)).Items {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tt := range []struct {
		filter LoopFilter
		want   string
	}{
		{LoopFilter{}, "acme/audit,acme/restock,acme/returns-eu"},
		{LoopFilter{Domain: "RETURNS"}, "acme/returns-eu"},
		{LoopFilter{Domain: "PROCUREMENT"}, "acme/restock"},
		{LoopFilter{Query: "CUSTOMS"}, "acme/returns-eu"},       // description, case-insensitive
		{LoopFilter{Query: "eu"}, "acme/returns-eu"},            // keyword and name
		{LoopFilter{Query: "restock approval"}, "acme/restock"}, // description
		{LoopFilter{Limit: 2}, "acme/audit,acme/restock"},
		{LoopFilter{Limit: 2, Offset: 2}, "acme/returns-eu"},
		{LoopFilter{Offset: 9}, ""},
	} {
		if got := names(tt.filter); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.filter, got, tt.want)
		}
	}
	s := f.s.LoopSummaries(LoopFilter{Query: "restock"})[0]
	if s.Latest != "1.0.0" || s.Versions != 1 || s.Domain != LoopDomainProcurement || s.Scope != "acme" {
		t.Errorf("summary = %+v", s)
	}
	for _, bad := range []LoopFilter{{Domain: "SALES"}, {Limit: MaxPageLimit + 1}, {Limit: -1}, {Offset: -1}} {
		wantCode(t, fmt.Sprintf("filter %+v", bad), bad.Validate(), EVALIDATION)
	}
}

func TestLoopCatalogReplayAndSnapshot(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	name := "acme/restock"
	var all []Record
	record := func(recs []Record, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		f.apply(recs)
		all = append(all, recs...)
	}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0-rc.1"} {
		_, recs, err := f.s.Publish(LoopPublishRequest{Name: name, Version: v, Manifest: loopManifest(t, name, v, nil), Publisher: "p"}, f.signer, f.now)
		record(recs, err)
	}
	_, recs, err := f.s.Yank(name, "1.1.0", "bad", "a", f.now)
	record(recs, err)
	_, recs, err = f.s.Deprecate(name, "1.0.0", "old", "a", f.now)
	record(recs, err)
	_, recs, err = f.s.SetDistTag(name, "next", "1.2.0-rc.1", "a", f.now)
	record(recs, err)

	want := func(s *LoopCatalogState) string {
		t.Helper()
		doc, err := s.Loop(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Resolve(name, "^1.0.0", true)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal([]any{doc, r})
		return string(b)
	}
	orig := want(f.s)

	// The journal: the same records replayed into an empty state.
	replayed := &catalogFixture{tb: t, s: NewLoopCatalogState("acme")}
	replayed.apply(all)
	if got := want(replayed.s); got != orig {
		t.Errorf("replayed state differs:\n%s\n%s", got, orig)
	}
	// A snapshot: the state's JSON loaded into a fresh value (the derived index is rebuilt).
	snap, err := json.Marshal(f.s)
	if err != nil {
		t.Fatal(err)
	}
	var loaded LoopCatalogState
	if err := json.Unmarshal(snap, &loaded); err != nil {
		t.Fatal(err)
	}
	if got := want(&loaded); got != orig {
		t.Errorf("snapshot state differs:\n%s\n%s", got, orig)
	}
	// A record of another kind is refused.
	if err := loaded.Apply(Put("scenario", "x", nil)); err == nil {
		t.Error("a foreign record kind should be refused")
	}
}

func TestLoopAuditIsBounded(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	name := "acme/restock"
	f.mustPublish(name, "1.0.0", nil)
	f.mustPublish(name, "1.1.0", nil)
	for i := range MaxLoopAuditEntries + 50 {
		version := []string{"1.0.0", "1.1.0"}[i%2]
		_, recs, err := f.s.SetDistTag(name, "pinned", version, "a", f.now)
		if err != nil {
			t.Fatal(err)
		}
		f.apply(recs)
	}
	if n := len(f.s.Audit); n != MaxLoopAuditEntries {
		t.Fatalf("%d audit entries kept, want %d", n, MaxLoopAuditEntries)
	}
	page, _ := f.s.LoopAudit(name, MaxPageLimit, 0)
	if page.Total != MaxLoopAuditEntries || page.Items[0].Seq != int64(MaxLoopAuditEntries+50+4-1) {
		t.Errorf("newest entry = %+v of %d", page.Items[0], page.Total)
	}
}

func TestBuiltinLoops(t *testing.T) {
	loops, err := BuiltinLoops()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range loops {
		names = append(names, b.Name+"@"+b.Version)
		m, err := ParseLoopManifest(b.Manifest)
		if err != nil {
			t.Errorf("%s: %v", b.Name, err)
			continue
		}
		for _, tr := range m.Transitions {
			if tr.Input == nil && !slices.Equal(tr.Roles, []string{LoopRoleSystem}) {
				t.Errorf("%s: transition %s takes no input; every API-fired built-in transition declares one", b.Name, tr.Name)
			}
		}
	}
	if strings.Join(names, ",") != "supplyplan/procurement@1.0.0,supplyplan/orders@1.0.0,supplyplan/returns@1.0.0,supplyplan/quality@1.0.0" {
		t.Fatalf("built-in loops = %v", names)
	}
	proc, _ := ParseLoopManifest(loops[0].Manifest)
	if strings.Join(proc.States, ",") != "draft,submitted,approved,ordered,partially_received,received,cancelled" {
		t.Errorf("procurement states = %v", proc.States)
	}
	receive, _ := proc.Transition("receive_partial")
	if err := receive.Input.ValidatePayload([]byte(`{"lines":[{"sku":"SKU-1","quantity":40,"locationId":"WH1"}],"receivedAt":"2026-11-03T10:00:00Z"}`), "input"); err != nil {
		t.Errorf("a goods receipt: %v", err)
	}
	if err := receive.Input.ValidatePayload([]byte(`{"lines":[{"sku":"SKU-1","quantity":-4}]}`), "input"); err == nil || !strings.Contains(err.Error(), "input.lines[0].quantity") {
		t.Errorf("a negative receipt: %v", err)
	}

	g := newCatalogFixture(t, GlobalLoopScope)
	recs, err := g.s.EnsureBuiltinLoops(g.signer, loopT0)
	if err != nil || len(recs) == 0 {
		t.Fatalf("ensure: %d records, %v", len(recs), err)
	}
	g.apply(recs)
	again, err := g.s.EnsureBuiltinLoops(g.signer, loopT0.Add(time.Hour))
	if err != nil || len(again) != 0 {
		t.Fatalf("second ensure: %d records, %v", len(again), err)
	}
	for _, b := range loops {
		r, err := g.s.Resolve(b.Name, "^1", false)
		if err != nil || r.Version != "1.0.0" {
			t.Errorf("resolve %s: %+v %v", b.Name, r, err)
		}
	}
	_, _, err = g.s.Remove("supplyplan/procurement", "1.0.0", nil, "platform", loopT0)
	wantCode(t, "remove a built-in", err, ECONFLICT)
	if _, err := NewLoopCatalogState("acme").EnsureBuiltinLoops(g.signer, loopT0); err == nil {
		t.Error("built-in loops published into an organization's scope")
	}
	// A built-in manifest changed without a version bump is refused loudly.
	changed := newCatalogFixture(t, GlobalLoopScope)
	changed.mustPublish("supplyplan/orders", "1.0.0", nil) // other content at a built-in's version
	if _, err := changed.s.EnsureBuiltinLoops(changed.signer, loopT0); ErrorCode(err) != EVERSIONEXISTS {
		t.Errorf("changed built-in: %v", err)
	}
}

func TestLoopResolveMatchesAFullScan(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	name := "acme/many"
	var all []string
	for _, v := range []string{"0.0.1", "0.0.2", "0.1.0", "0.1.5", "0.2.0-rc.1", "0.2.0", "1.0.0-alpha", "1.0.0", "1.0.1",
		"1.1.0", "1.2.0-beta.1", "1.2.0-beta.2", "1.2.0", "1.10.0", "2.0.0-rc.1", "2.0.0", "2.5.3", "3.0.0"} {
		f.mustPublish(name, v, nil)
		all = append(all, v)
	}
	for _, spec := range []string{"^0.0.1", "^0.1", "^1", "^1.2.0-beta.1", "~1.2", "1.x || 2.x", "1.0.0 - 2.0.0", ">=1.1.0 <2",
		"<1", ">2", "*", "<=1.2.0", "^2.0.0-rc.1", "1.2.0-beta.2", "^0.0.0", ">=0.1.5 <0.2.0 || ^2.5"} {
		for _, incPre := range []bool{false, true} {
			r := MustParseSemVerRange(spec, incPre)
			var want []string
			for i := len(all) - 1; i >= 0; i-- {
				if r.Contains(MustParseSemVer(all[i])) {
					want = append(want, all[i])
				}
			}
			for pass := range 2 { // the second answer comes from the view's memo
				got, err := f.s.Resolve(name, spec, incPre)
				if len(want) == 0 {
					if ErrorCode(err) != ENOTFOUND {
						t.Errorf("%q (includePrerelease %v, pass %d): %+v %v, want not found", spec, incPre, pass, got, err)
					}
					continue
				}
				if err != nil || strings.Join(got.Candidates, ",") != strings.Join(want, ",") || got.Version != want[0] {
					t.Errorf("%q (includePrerelease %v, pass %d): %v %v, want %v", spec, incPre, pass, got.Candidates, err, want)
				}
			}
		}
	}
}

// An actor loads a snapshot into the state its constructor built (whose index exists already):
// the loaded versions must be found, not the constructor's empty index.
func TestLoopCatalogSnapshotIntoBuiltState(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	f.mustPublish("acme/restock", "1.0.0", nil)
	f.mustPublish("acme/restock", "1.1.0", nil)
	snap, err := json.Marshal(f.s)
	if err != nil {
		t.Fatal(err)
	}
	loaded := NewLoopCatalogState("acme")
	if err := json.Unmarshal(snap, loaded); err != nil {
		t.Fatal(err)
	}
	r, err := loaded.Resolve("acme/restock", "^1", false)
	if err != nil || r.Version != "1.1.0" {
		t.Fatalf("resolve after snapshot load = %+v, %v; want 1.1.0", r, err)
	}
	if loaded.Scope != "acme" {
		t.Fatalf("scope = %q", loaded.Scope)
	}
	// The derived byte count is rebuilt too: the scope's manifest bytes still count.
	if loaded.ensureIndex(); loaded.blobBytes != f.s.blobBytes || loaded.blobBytes == 0 {
		t.Fatalf("blob bytes %d, want %d", loaded.blobBytes, f.s.blobBytes)
	}
}

// Preparing a publish outside the actor must not change which error a publish answers.
func TestLoopPublishPreparedKeepsTheCheckOrder(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	publish := func(name, version string, manifest []byte, signer *LoopSigner) error {
		_, recs, err := f.s.PublishPrepared(PrepareLoopPublish(LoopPublishRequest{Name: name, Version: version, Manifest: manifest, Publisher: "p"}, signer), f.now)
		if err == nil {
			f.apply(recs)
		}
		return err
	}
	wantCode(t, "another scope's name with bad JSON", publish("beta/x", "1.0.0", []byte("{"), f.signer), ENOTFOUND)
	wantCode(t, "a bad version with bad JSON", publish("acme/x", "1.0", []byte("{"), f.signer), EVALIDATION)
	wantCode(t, "no signer", publish("acme/restock", "1.0.0", loopManifest(t, "acme/restock", "1.0.0", nil), nil), EINTERNAL)
	if err := publish("acme/restock", "1.0.0", loopManifest(t, "acme/restock", "1.0.0", nil), f.signer); err != nil {
		t.Fatal(err)
	}
	invalid := loopManifest(t, "acme/restock", "1.0.0", func(m map[string]any) { m["states"] = []any{} })
	wantCode(t, "invalid content under a published version", publish("acme/restock", "1.0.0", invalid, f.signer), EVERSIONEXISTS)
	wantCode(t, "invalid content under a new version", publish("acme/restock", "1.1.0", loopManifest(t, "acme/restock", "1.1.0",
		func(m map[string]any) { m["states"] = []any{} }), f.signer), EVALIDATION)
	v, err := f.s.Version("acme/restock", "1.0.0")
	if err != nil || len(v.Signatures) != 1 || v.Signatures[0].KeyID != f.signer.KeyID() || v.Integrity == "" {
		t.Fatalf("prepared version = %+v, %v", v, err)
	}
}

// A view handed out of the actor is a snapshot: later changes make a new one and leave it as it was.
func TestLoopViewIsASnapshot(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	name := "acme/restock"
	f.mustPublish(name, "1.0.0", nil)
	before, err := f.s.View(name)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := f.s.View(name); again != before {
		t.Fatal("an unchanged loop's view is built again")
	}
	if r, err := before.Resolve("^1", false); err != nil || r.Version != "1.0.0" { // memoized in the old view
		t.Fatalf("resolve before the changes: %+v, %v", r, err)
	}
	f.mustPublish(name, "1.1.0", nil)
	_, recs, err := f.s.Yank(name, "1.0.0", "bad", "a", f.now)
	if err != nil {
		t.Fatal(err)
	}
	f.apply(recs)
	if r, err := before.Resolve("^1", false); err != nil || r.Version != "1.0.0" || len(r.Candidates) != 1 {
		t.Fatalf("the old view after changes: %+v, %v", r, err)
	}
	if doc := before.Document(); len(doc.Versions) != 1 || doc.Versions[0].Yanked || doc.DistTags[LatestTag] != "1.0.0" {
		t.Fatalf("the old view's document changed: %+v", doc)
	}
	after, err := f.s.View(name)
	if err != nil || after == before {
		t.Fatalf("no new view after a change: %v", err)
	}
	if r, err := after.Resolve("^1", false); err != nil || r.Version != "1.1.0" || len(r.Candidates) != 1 {
		t.Fatalf("the new view: %+v, %v", r, err)
	}
	if tags := after.DistTags(); tags[LatestTag] != "1.1.0" {
		t.Fatalf("dist-tags = %v", tags)
	}
	if _, err := f.s.View("beta/restock"); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("another scope's view: %v", err)
	}
}

// A view memoizes its answers to ranges, at most maxResolvedPerView of them, also when new
// ranges are resolved concurrently; an answer from the memo is the computed one.
func TestLoopResolveMemo(t *testing.T) {
	f := newCatalogFixture(t, "acme")
	name := "acme/restock"
	for minor := range 20 {
		f.mustPublish(name, fmt.Sprintf("1.%d.0", minor), nil)
	}
	view, err := f.s.View(name)
	if err != nil {
		t.Fatal(err)
	}
	first, err := view.Resolve("^1", false)
	if err != nil || first.Version != "1.19.0" || len(first.Candidates) != 20 {
		t.Fatalf("^1: %+v, %v", first, err)
	}
	again, err := view.Resolve(" ^1 ", false) // the same range once trimmed
	if err != nil || !reflect.DeepEqual(again, first) || view.nResolved.Load() != 1 {
		t.Fatalf("^1 again: %+v, %v (%d memoized), want %+v", again, err, view.nResolved.Load(), first)
	}
	if _, err := view.Resolve("^2", false); ErrorCode(err) != ENOTFOUND || view.nResolved.Load() != 1 {
		t.Fatalf("^2: %v (%d memoized); a failure is not memoized", err, view.nResolved.Load())
	}
	var wg sync.WaitGroup
	for minor := range 20 {
		wg.Go(func() {
			spec := fmt.Sprintf(">=1.%d.0", minor)
			for range 3 {
				r, err := view.Resolve(spec, false)
				if err != nil || r.Version != "1.19.0" || len(r.Candidates) != 20-minor {
					t.Errorf("%s: %+v, %v", spec, r, err)
				}
			}
		})
	}
	wg.Wait()
	kept := 0
	view.resolved.Range(func(any, any) bool { kept++; return true })
	if n := view.nResolved.Load(); n != maxResolvedPerView || kept != maxResolvedPerView {
		t.Fatalf("%d answers memoized (counted %d), want %d", kept, n, maxResolvedPerView)
	}
}
