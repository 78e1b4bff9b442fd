package jwtauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const testIssuer = "https://issuer.example.test"

// clock is a settable Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// signer is a private key, its algorithm and the kid its tokens carry.
type signer struct {
	method jwt.SigningMethod
	key    any // the private key
	pub    any
	kid    string
}

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
)

// testRSAKey is generated once per test binary: 2048-bit generation is slow under -race.
func testRSAKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	rsaOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		rsaKey = k
	})
	return rsaKey
}

func rsaSigner(tb testing.TB, kid string) signer {
	k := testRSAKey(tb)
	return signer{method: jwt.SigningMethodRS256, key: k, pub: &k.PublicKey, kid: kid}
}

func ecSigner(tb testing.TB, kid string) signer {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return signer{method: jwt.SigningMethodES256, key: k, pub: &k.PublicKey, kid: kid}
}

func edSigner(tb testing.TB, kid string) signer {
	tb.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return signer{method: jwt.SigningMethodEdDSA, key: priv, pub: pub, kid: kid}
}

// jwk is the signer's public key as a JWK.
func (s signer) jwk(tb testing.TB) map[string]string {
	tb.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	switch pub := s.pub.(type) {
	case *rsa.PublicKey:
		return map[string]string{"kty": "RSA", "kid": s.kid, "use": "sig", "alg": "RS256", "n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())}
	case *ecdsa.PublicKey:
		raw, err := pub.Bytes()
		if err != nil {
			tb.Fatal(err)
		}
		return map[string]string{"kty": "EC", "kid": s.kid, "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}
	case ed25519.PublicKey:
		return map[string]string{"kty": "OKP", "kid": s.kid, "crv": "Ed25519", "x": b64(pub)}
	}
	tb.Fatalf("unknown key %T", s.pub)
	return nil
}

// publicPEM is the signer's public key as a PKIX PEM block.
func (s signer) publicPEM(tb testing.TB) []byte {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(s.pub)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// jwks renders a key set.
func jwks(tb testing.TB, signers ...signer) []byte {
	tb.Helper()
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	for _, s := range signers {
		set.Keys = append(set.Keys, s.jwk(tb))
	}
	b, err := json.Marshal(set)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func writeFile(tb testing.TB, name string, data []byte) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

var jtiSeq atomic.Int64

// claimsAt are valid claims issued at now: ten minutes of life, a fresh jti.
func claimsAt(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss":   testIssuer,
		"aud":   DefaultAudience,
		"sub":   "user-1",
		"jti":   "jti-" + big.NewInt(jtiSeq.Add(1)).String(),
		"org":   "demo",
		"scope": "loops:write",
		"iat":   now.Unix(),
		"exp":   now.Add(10 * time.Minute).Unix(),
	}
}

// sign signs claims with s, setting the kid header when s has one.
func (s signer) sign(tb testing.TB, claims jwt.MapClaims) string {
	tb.Helper()
	tok := jwt.NewWithClaims(s.method, claims)
	if s.kid != "" {
		tok.Header["kid"] = s.kid
	}
	out, err := tok.SignedString(s.key)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func mustVerifier(tb testing.TB, cfg Config) *Verifier {
	tb.Helper()
	v, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(v.Close)
	return v
}

// jwksServer serves a key set that the test can replace, counting the fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	body    []byte
	fetches atomic.Int64
}

func newJWKSServer(tb testing.TB, body []byte) *jwksServer {
	tb.Helper()
	s := &jwksServer{body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		b := s.body
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(b)
	}))
	tb.Cleanup(s.Close)
	return s
}

func (s *jwksServer) serve(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
}
