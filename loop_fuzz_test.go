package supplyplan

import (
	"bytes"
	"testing"
)

// FuzzCanonicalJSON: canonicalization never panics, its output is canonical (a fixed point) and
// valid strict JSON.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{issueManifest, `{"b":[1,2.50,-0,1e400]}`, `"\u001f\ud83d\ude00"`, `[{"a":{}},[],null,true]`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := CanonicalJSON(data)
		if err != nil {
			return
		}
		again, err := CanonicalJSON(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("canonical form is not a fixed point: %q -> %q (%v)", c, again, err)
		}
	})
}

// FuzzParseSemVerRange: ranges never panic, and what a range contains lies within its bounds.
func FuzzParseSemVerRange(f *testing.F) {
	for _, s := range []string{"^1.2.3", "~0.0.1-beta.2 || >=3", "1.2 - 2.x", "<x <* || >* 2.x", ">=1.2.3 <1.5.0-0", "^ 1.2 ^ 1"} {
		f.Add(s, "1.2.4-alpha.1", false)
	}
	f.Fuzz(func(t *testing.T, rng, version string, incPre bool) {
		r, err := ParseSemVerRange(rng, incPre)
		if err != nil {
			return
		}
		_ = r.String()
		v, err := ParseSemVer(version)
		if err != nil || !r.Contains(v) {
			return
		}
		lo, loOK, hi, hiOK := r.Bounds()
		if loOK && v.Compare(lo) < 0 || hiOK && v.Compare(hi) > 0 {
			t.Fatalf("%q contains %s outside its bounds", rng, version)
		}
	})
}

// FuzzParseLoopManifest: manifests never panic the validator, and a valid one publishes.
func FuzzParseLoopManifest(f *testing.F) {
	f.Add([]byte(issueManifest))
	f.Add(loopManifest(f, "acme/x", "1.0.0", func(m map[string]any) {
		transition(m, 0)["input"] = map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "integer", "multipleOf": 0.5, "enum": []any{1, 2}}}}
	}))
	signer := mustLoopSigner(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseLoopManifest(data)
		if err != nil {
			if ErrorCode(err) != EVALIDATION && ErrorCode(err) != ETOOLARGE {
				t.Fatalf("unexpected error code: %v", err)
			}
			return
		}
		scope, _, _ := ParseLoopName(m.Name)
		s := NewLoopCatalogState(scope)
		if _, _, err := s.Publish(LoopPublishRequest{Name: m.Name, Version: m.Version, Manifest: data}, signer, loopT0); err != nil {
			t.Fatalf("a valid manifest did not publish: %v", err)
		}
	})
}

// FuzzDecodePlainJSON: the fast path of decodeJSONValue decodes what it takes as the token stream
// does, and declines nothing the token stream would decode differently: whatever it returns, the
// token stream returns the same value for.
func FuzzDecodePlainJSON(f *testing.F) {
	for _, s := range plainJSONCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPlainJSON(t, data)
	})
}
