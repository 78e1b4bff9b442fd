package supplyplan

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Integrity of published loops. A manifest is stored as its RFC 8785 canonical bytes; a version
// carries the content digest of those bytes (OCI style, `sha256:<hex>`), their Subresource
// Integrity string (npm's dist.integrity, `sha512-<base64>`), and the catalog's Ed25519
// signatures over `{name}@{version}:{integrity}` (the payload of npm's registry signatures).
// The catalog publishes its public keys as a JWKS (RFC 7517, OKP keys of RFC 8037) whose key ids
// are RFC 7638 thumbprints, so anyone can check a downloaded manifest offline.

// LoopDigest returns the content digest of canonical manifest bytes: "sha256:<lowercase hex>".
func LoopDigest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// LoopIntegrity returns the Subresource Integrity string of canonical manifest bytes:
// "sha512-<standard base64>".
func LoopIntegrity(canonical []byte) string {
	sum := sha512.Sum512(canonical)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// LoopSignaturePayload is what the catalog signs for a version: `{name}@{version}:{integrity}`.
func LoopSignaturePayload(name, version, integrity string) []byte {
	return []byte(name + "@" + version + ":" + integrity)
}

// LoopSignature is one signature of a version: the signing key's id and the standard-base64
// Ed25519 signature of LoopSignaturePayload.
type LoopSignature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// LoopDist is what identifies and protects a published manifest (npm's `dist`): a version's
// name, version, digest, integrity and signatures, as GET .../versions/{version} returns them.
type LoopDist struct {
	Name       string          `json:"name"`
	Version    string          `json:"version"`
	Digest     string          `json:"digest"`
	Integrity  string          `json:"integrity"`
	Signatures []LoopSignature `json:"signatures"`
}

// LoopSigner signs versions with the catalog's Ed25519 key.
type LoopSigner struct {
	key ed25519.PrivateKey
	jwk JWK
}

// NewLoopSigner returns a signer for key.
func NewLoopSigner(key ed25519.PrivateKey) (*LoopSigner, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("loop signing key: want %d bytes, got %d", ed25519.PrivateKeySize, len(key))
	}
	return &LoopSigner{key: key, jwk: LoopPublicJWK(key.Public().(ed25519.PublicKey))}, nil
}

// KeyID is the id of the signer's key in the JWKS.
func (s *LoopSigner) KeyID() string { return s.jwk.Kid }

// PublicJWK is the signer's public key as a JWK.
func (s *LoopSigner) PublicJWK() JWK { return s.jwk }

// Sign returns the signature of name@version:integrity.
func (s *LoopSigner) Sign(name, version, integrity string) LoopSignature {
	sig := ed25519.Sign(s.key, LoopSignaturePayload(name, version, integrity))
	return LoopSignature{KeyID: s.jwk.Kid, Sig: base64.StdEncoding.EncodeToString(sig)}
}

// GenerateLoopSigningKey returns a new Ed25519 key (from crypto/rand).
func GenerateLoopSigningKey() (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(nil)
	return key, err
}

// MarshalLoopSigningKey renders key as a PKCS#8 PEM block ("PRIVATE KEY"), the form written to
// the data dir and accepted as configuration (`openssl genpkey -algorithm ed25519` writes it).
func MarshalLoopSigningKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode loop signing key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseLoopSigningKey parses a PKCS#8 PEM Ed25519 private key.
func ParseLoopSigningKey(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("loop signing key: want a PEM \"PRIVATE KEY\" block (PKCS#8)")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("loop signing key: %w", err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("loop signing key: want an Ed25519 key, got %T", k)
	}
	return key, nil
}

// JWK is a public key of the catalog (RFC 7517; an OKP key of RFC 8037).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
}

// JWKS is the key set served at GET /.well-known/loop-catalog/keys. It keeps retired keys so
// that versions signed before a rotation still verify.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// LoopPublicJWK returns pub as a JWK whose kid is its RFC 7638 thumbprint.
func LoopPublicJWK(pub ed25519.PublicKey) JWK {
	x := base64.RawURLEncoding.EncodeToString(pub)
	return JWK{Kty: "OKP", Crv: "Ed25519", X: x, Kid: jwkThumbprint(x), Use: "sig", Alg: "EdDSA"}
}

// jwkThumbprint is RFC 7638's thumbprint of an Ed25519 OKP key: the base64url SHA-256 of its
// required members in lexicographic order, without whitespace.
func jwkThumbprint(x string) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// PublicKey returns the Ed25519 key of a JWK, checking its type and that its kid is its thumbprint.
func (k JWK) PublicKey() (ed25519.PublicKey, error) {
	if k.Kty != "OKP" || k.Crv != "Ed25519" {
		return nil, fmt.Errorf("key %q: want kty OKP and crv Ed25519", k.Kid)
	}
	pub, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("key %q: x is not a base64url Ed25519 public key", k.Kid)
	}
	if k.Kid != jwkThumbprint(k.X) {
		return nil, fmt.Errorf("key %q: kid is not the key's RFC 7638 thumbprint", k.Kid)
	}
	return pub, nil
}

// LoopVerification is what VerifyLoopManifest established.
type LoopVerification struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Digest    string `json:"digest"`
	Integrity string `json:"integrity"`
	// KeyID is the key whose signature verified.
	KeyID string `json:"keyid"`
	// Canonical reports whether the bytes given were already canonical (as GET /v1/blobs serves
	// them); reformatted JSON of the same content verifies too, since the checks run on the
	// canonical form.
	Canonical bool `json:"canonical"`
}

// VerifyLoopManifest checks manifest bytes against a version's dist and the catalog's keys: the
// manifest names dist's name and version, its canonical form has dist's digest and integrity,
// and a signature by a key of keys verifies over name@version:integrity. A failure is a
// VALIDATION_ERROR whose details name each check that failed (name, version, digest, integrity,
// signatures).
func VerifyLoopManifest(manifest []byte, dist LoopDist, keys JWKS) (LoopVerification, error) {
	res := LoopVerification{Name: dist.Name, Version: dist.Version}
	fail := func(fe FieldErrors) error {
		return &Error{Code: EVALIDATION, Message: "Loop manifest verification failed", Details: map[string][]string(fe)}
	}
	fe := FieldErrors{}
	canonical, err := CanonicalJSON(manifest)
	if err != nil {
		fe.Add("manifest", "is not valid JSON: %s", errorDetailText(err))
		return res, fail(fe)
	}
	res.Canonical = bytes.Equal(canonical, manifest)
	var head struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	_ = json.Unmarshal(canonical, &head) // a non-object or non-string leaves them empty: a mismatch below
	if head.Name != dist.Name {
		fe.Add("name", "the manifest names %q, the version is of %q", head.Name, dist.Name)
	}
	if head.Version != dist.Version {
		fe.Add("version", "the manifest has version %q, expected %q", head.Version, dist.Version)
	}
	res.Digest, res.Integrity = LoopDigest(canonical), LoopIntegrity(canonical)
	if dist.Digest != res.Digest {
		fe.Add("digest", "the manifest's digest is %s, expected %s", res.Digest, dist.Digest)
	}
	if !integrityMatches(dist.Integrity, res.Integrity) {
		fe.Add("integrity", "the manifest's integrity is %s, expected %s", res.Integrity, dist.Integrity)
	}
	if len(fe) > 0 {
		return res, fail(fe)
	}
	payload := LoopSignaturePayload(dist.Name, dist.Version, res.Integrity)
	known := 0
	for i, s := range dist.Signatures {
		var jwk *JWK
		for j := range keys.Keys {
			if keys.Keys[j].Kid == s.KeyID {
				jwk = &keys.Keys[j]
				break
			}
		}
		if jwk == nil {
			continue // a key this catalog does not publish: neither trusted nor an error
		}
		known++
		pub, err := jwk.PublicKey()
		if err != nil {
			fe.Add(fmt.Sprintf("signatures[%d]", i), "%v", err)
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil || !ed25519.Verify(pub, payload, sig) {
			fe.Add(fmt.Sprintf("signatures[%d]", i), "the signature by key %s does not verify", s.KeyID)
			continue
		}
		if res.KeyID == "" {
			res.KeyID = s.KeyID
		}
	}
	if len(fe) > 0 {
		return res, fail(fe)
	}
	if known == 0 {
		fe.Add("signatures", "no signature by a key of the catalog's key set")
		return res, fail(fe)
	}
	return res, nil
}

// integrityMatches reports whether an SRI string (possibly several space-separated hashes, each
// with optional ?options) holds want.
func integrityMatches(sri, want string) bool {
	for _, tok := range strings.Fields(sri) {
		if i := strings.IndexByte(tok, '?'); i >= 0 {
			tok = tok[:i]
		}
		if tok == want {
			return true
		}
	}
	return false
}

// errorDetailText is err's message with its details, for nesting one error in another's detail.
func errorDetailText(err error) string {
	var e *Error
	if errors.As(err, &e) {
		if len(e.Details) == 0 {
			return e.Message
		}
		parts := make([]string, 0, len(e.Details))
		for k, v := range e.Details {
			parts = append(parts, k+": "+strings.Join(v, "; "))
		}
		slices.Sort(parts)
		return strings.Join(parts, ", ")
	}
	return err.Error()
}
