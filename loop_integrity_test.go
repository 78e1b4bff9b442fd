package supplyplan

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"
)

func TestLoopDigestAndIntegrity(t *testing.T) {
	// Known answers: SHA-256 and SHA-512 of the empty input.
	if got, want := LoopDigest(nil), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("LoopDigest = %s, want %s", got, want)
	}
	if got, want := LoopIntegrity(nil), "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="; got != want {
		t.Errorf("LoopIntegrity = %s, want %s", got, want)
	}
}

func TestJWKThumbprintRFC8037(t *testing.T) {
	// RFC 8037 appendix A.1-A.4: the Ed25519 test key, its RFC 7638 thumbprint and a signature.
	seed, err := base64.RawURLEncoding.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	if err != nil {
		t.Fatal(err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	jwk := LoopPublicJWK(key.Public().(ed25519.PublicKey))
	if jwk.X != "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" {
		t.Errorf("x = %s", jwk.X)
	}
	if jwk.Kid != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Errorf("kid = %s", jwk.Kid)
	}
	sig := ed25519.Sign(key, []byte("eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc"))
	if got := base64.RawURLEncoding.EncodeToString(sig); got != "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg" {
		t.Errorf("signature = %s", got)
	}
	if _, err := jwk.PublicKey(); err != nil {
		t.Errorf("PublicKey: %v", err)
	}
	bad := jwk
	bad.Kid = "other"
	if _, err := bad.PublicKey(); err == nil {
		t.Error("a kid that is not the thumbprint should be refused")
	}
}

func TestLoopSigningKeyPEMRoundTrip(t *testing.T) {
	key, err := GenerateLoopSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := MarshalLoopSigningKey(key)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseLoopSigningKey(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !key.Equal(back) {
		t.Fatal("key changed in the PEM round trip")
	}
	for _, in := range []string{"", "junk", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"} {
		if _, err := ParseLoopSigningKey([]byte(in)); err == nil {
			t.Errorf("ParseLoopSigningKey(%q) should fail", in)
		}
	}
}

// signedManifest returns a canonical manifest, its dist signed by a new key and the key set.
func signedManifest(t *testing.T) ([]byte, LoopDist, JWKS, *LoopSigner) {
	t.Helper()
	key, err := GenerateLoopSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewLoopSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := CanonicalJSON([]byte(`{"version":"1.2.0","name":"acme/restock","states":["a","b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	dist := LoopDist{Name: "acme/restock", Version: "1.2.0", Digest: LoopDigest(canonical), Integrity: LoopIntegrity(canonical)}
	dist.Signatures = []LoopSignature{signer.Sign(dist.Name, dist.Version, dist.Integrity)}
	return canonical, dist, JWKS{Keys: []JWK{signer.PublicJWK()}}, signer
}

func TestVerifyLoopManifest(t *testing.T) {
	canonical, dist, keys, signer := signedManifest(t)
	res, err := VerifyLoopManifest(canonical, dist, keys)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if !res.Canonical || res.KeyID != signer.KeyID() || res.Digest != dist.Digest {
		t.Errorf("result = %+v", res)
	}
	// The same content reformatted still verifies (checks run on the canonical form).
	pretty := []byte("{\n  \"states\": [\"a\", \"b\"],\n  \"name\": \"acme/restock\",\n  \"version\": \"1.2.0\"\n}\n")
	if res, err := VerifyLoopManifest(pretty, dist, keys); err != nil || res.Canonical {
		t.Errorf("reformatted: %+v, %v", res, err)
	}

	_, _, otherKeys, _ := signedManifest(t)
	tamper := func(name string, manifest []byte, d LoopDist, k JWKS, wantField string) {
		t.Helper()
		_, err := VerifyLoopManifest(manifest, d, k)
		if err == nil {
			t.Errorf("%s: verified, want a failure", name)
			return
		}
		e, ok := err.(*Error)
		if !ok || e.Code != EVALIDATION || len(e.Details[wantField]) == 0 {
			t.Errorf("%s: got %v, want details on %s", name, err, wantField)
		}
	}
	tamper("tampered content", []byte(strings.Replace(string(canonical), `"b"`, `"c"`, 1)), dist, keys, "digest")
	tamper("tampered content (integrity)", []byte(strings.Replace(string(canonical), `"b"`, `"c"`, 1)), dist, keys, "integrity")
	tamper("not JSON", []byte(`{"name":`), dist, keys, "manifest")
	d := dist
	d.Version = "1.3.0" // a valid manifest passed off as another version
	tamper("other version", canonical, d, keys, "version")
	tamper("unknown signing key", canonical, dist, otherKeys, "signatures")
	d = dist
	d.Signatures = []LoopSignature{{KeyID: dist.Signatures[0].KeyID, Sig: base64.StdEncoding.EncodeToString(make([]byte, 64))}}
	tamper("forged signature", canonical, d, keys, "signatures[0]")
	d = dist
	d.Signatures = []LoopSignature{signer.Sign(dist.Name, "1.3.0", dist.Integrity)} // signed for another version
	tamper("signature of another version", canonical, d, keys, "signatures[0]")
	d = dist
	d.Signatures = nil
	tamper("unsigned", canonical, d, keys, "signatures")
	// An SRI string may list several hashes, with options.
	d = dist
	d.Integrity = "sha256-abc " + dist.Integrity + "?opt"
	if _, err := VerifyLoopManifest(canonical, d, keys); err != nil {
		t.Errorf("several hashes: %v", err)
	}
}
