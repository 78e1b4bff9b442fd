package jwtauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"sync"
	"time"
)

// Key fetching and caching.
const (
	refetchInterval = 10 * time.Second // at most one fetch per interval on an unknown kid
	refreshInterval = 5 * time.Minute  // the periodic refresh
	fetchTimeout    = 5 * time.Second
	maxJWKSBytes    = 1 << 20
	maxKeys         = 100
	minRSABits      = 2048
	maxRSABits      = 8192
)

// publicKey is one verification key: *rsa.PublicKey, *ecdsa.PublicKey (P-256) or
// ed25519.PublicKey.
type publicKey struct {
	kid string // "" for a PEM key: it matches any kid
	alg string // the JWK's `alg`, when it names one
	key any
}

// fits reports whether the key may verify a signature of alg.
func (k publicKey) fits(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		return alg == "RS256"
	case *ecdsa.PublicKey:
		return alg == "ES256" && key.Curve == elliptic.P256()
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// keySet is an immutable set of verification keys.
type keySet struct{ keys []publicKey }

type lookupResult int

const (
	keyFound lookupResult = iota
	keyUnknown
	keyWrongAlg // the kid is known but its key does not fit the token's algorithm
)

// lookup returns the keys that may verify a token signed with alg under kid: the keys with that
// kid, else the keys without a kid (PEM keys); without a kid, every key that fits alg.
func (s *keySet) lookup(kid, alg string) ([]any, lookupResult) {
	if s == nil {
		return nil, keyUnknown
	}
	var out []any
	if kid != "" {
		named := false
		for _, k := range s.keys {
			if k.kid == kid {
				named = true
				if k.fits(alg) {
					out = append(out, k.key)
				}
			}
		}
		if named {
			if len(out) == 0 {
				return nil, keyWrongAlg
			}
			return out, keyFound
		}
	}
	for _, k := range s.keys {
		if (kid == "" || k.kid == "") && k.fits(alg) {
			out = append(out, k.key)
		}
	}
	if len(out) == 0 {
		return nil, keyUnknown
	}
	return out, keyFound
}

// keySource caches the key set of one JWKS URL or file. An unknown kid triggers a fetch, at most
// one per refetchInterval of the configured clock; concurrent callers share a fetch in flight. A
// failed fetch keeps the keys already known.
type keySource struct {
	load func(context.Context) (*keySet, error)
	now  func() time.Time
	wg   *sync.WaitGroup // fetch goroutines, waited for by Verifier.Close

	mu          sync.Mutex
	set         *keySet
	attempted   bool
	lastAttempt time.Time
	inflight    chan struct{} // closed when the fetch in flight ends
}

func newKeySource(load func(context.Context) (*keySet, error), now func() time.Time, wg *sync.WaitGroup) *keySource {
	return &keySource{load: load, now: now, wg: wg}
}

// loadNow loads synchronously (a key file at New) and reports the error.
func (s *keySource) loadNow() error {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	set, err := s.load(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempted, s.lastAttempt = true, s.now()
	if err != nil {
		return err
	}
	s.set = set
	return nil
}

// refresh starts a fetch unless one is in flight.
func (s *keySource) refresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		s.startLocked()
	}
}

// startLocked starts a fetch in the background; s.mu is held.
func (s *keySource) startLocked() chan struct{} {
	ch := make(chan struct{})
	s.inflight = ch
	s.attempted, s.lastAttempt = true, s.now()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		defer cancel()
		set, err := s.load(ctx)
		s.mu.Lock()
		if err == nil {
			s.set = set
		}
		s.inflight = nil
		s.mu.Unlock()
		close(ch)
	}()
	return ch
}

// candidates returns the keys for kid and alg, fetching the set again (rate limited) when kid is
// unknown.
func (s *keySource) candidates(ctx context.Context, kid, alg string) ([]any, *Error) {
	s.mu.Lock()
	keys, res := s.set.lookup(kid, alg)
	if res != keyUnknown {
		s.mu.Unlock()
		return keys, lookupError(res, true)
	}
	ch := s.inflight
	if ch == nil {
		if s.attempted && s.now().Sub(s.lastAttempt) < refetchInterval {
			known := s.set != nil
			s.mu.Unlock()
			return nil, lookupError(keyUnknown, known)
		}
		ch = s.startLocked()
	}
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, invalidToken("signing keys unavailable: retry later")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keys, res = s.set.lookup(kid, alg)
	return keys, lookupError(res, s.set != nil)
}

func lookupError(res lookupResult, haveKeys bool) *Error {
	switch {
	case res == keyFound:
		return nil
	case res == keyWrongAlg:
		return invalidToken("token kid names a key of another algorithm")
	case !haveKeys:
		return invalidToken("signing keys unavailable: retry later")
	}
	return invalidToken("token kid is not a known signing key")
}

// fetchKeys GETs a JWKS, within fetchTimeout (or ctx) and maxJWKSBytes.
func fetchKeys(ctx context.Context, client *http.Client, url string) (*keySet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch JWKS: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("fetch JWKS: larger than %d bytes", maxJWKSBytes)
	}
	return parseKeys(body)
}

// readKeyFile reads a JWKS, a single JWK or PEM public keys from a file.
func readKeyFile(path string) (*keySet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("key file %s: larger than %d bytes", path, maxJWKSBytes)
	}
	set, err := parseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return set, nil
}

// parseKeys parses a JWKS ({"keys": [...]}), a single JWK or PEM blocks of public keys. Keys this
// verifier cannot use (encryption keys, symmetric keys, other curves) are left out; a set without
// any usable key is an error.
func parseKeys(data []byte) (*keySet, error) {
	data = bytes.TrimSpace(data)
	var keys []publicKey
	switch {
	case bytes.HasPrefix(data, []byte("{")):
		var doc struct {
			Keys *[]jwk `json:"keys"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("not a JWKS: %w", err)
		}
		var list []jwk
		if doc.Keys != nil {
			list = *doc.Keys
		} else {
			var one jwk
			if err := json.Unmarshal(data, &one); err != nil {
				return nil, fmt.Errorf("not a JWK: %w", err)
			}
			list = []jwk{one}
		}
		for _, k := range list {
			if pk, ok := k.publicKey(); ok {
				keys = append(keys, pk)
			}
		}
	case bytes.HasPrefix(data, []byte("-----BEGIN")):
		var err error
		if keys, err = parsePEM(data); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("neither a JWKS (JSON) nor PEM")
	}
	if len(keys) == 0 {
		return nil, errors.New("no usable signing key (RSA of 2048 bits or more, EC P-256 or Ed25519)")
	}
	if len(keys) > maxKeys {
		keys = keys[:maxKeys]
	}
	return &keySet{keys: keys}, nil
}

// jwk holds the public members of a JSON Web Key (RFC 7517, 7518 §6, 8037). Private members (d)
// are never read.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// publicKey returns the verification key of k, or false when k is not an RS256, ES256 or EdDSA
// signing key or is malformed.
func (k jwk) publicKey() (publicKey, bool) {
	if k.Use != "" && k.Use != "sig" {
		return publicKey{}, false
	}
	pk := publicKey{kid: k.Kid, alg: k.Alg}
	b64 := base64.RawURLEncoding.DecodeString
	switch {
	case k.Kty == "RSA" && (k.Alg == "" || k.Alg == "RS256"):
		n, err1 := b64(k.N)
		e, err2 := b64(k.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			return publicKey{}, false
		}
		key := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if !rsaUsable(key) {
			return publicKey{}, false
		}
		pk.key = key
	case k.Kty == "EC" && k.Crv == "P-256" && (k.Alg == "" || k.Alg == "ES256"):
		x, err1 := b64(k.X)
		y, err2 := b64(k.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return publicKey{}, false
		}
		key, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil { // not on the curve
			return publicKey{}, false
		}
		pk.key = key
	case k.Kty == "OKP" && k.Crv == "Ed25519" && (k.Alg == "" || k.Alg == "EdDSA"):
		x, err := b64(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return publicKey{}, false
		}
		pk.key = ed25519.PublicKey(x)
	default:
		return publicKey{}, false
	}
	return pk, true
}

func rsaUsable(k *rsa.PublicKey) bool {
	bits := k.N.BitLen()
	return bits >= minRSABits && bits <= maxRSABits && k.E >= 3 && k.E%2 == 1
}

// parsePEM reads "PUBLIC KEY" (PKIX), "RSA PUBLIC KEY" (PKCS #1) and "CERTIFICATE" blocks. Any
// other block (a private key in particular) is an error.
func parsePEM(data []byte) ([]publicKey, error) {
	var keys []publicKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		var key any
		var err error
		switch block.Type {
		case "PUBLIC KEY":
			key, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			key, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				key = cert.PublicKey
			}
		default:
			return nil, fmt.Errorf("PEM block %q: want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", block.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %q: %w", block.Type, err)
		}
		switch k := key.(type) {
		case *rsa.PublicKey:
			if !rsaUsable(k) {
				continue
			}
		case *ecdsa.PublicKey:
			if k.Curve != elliptic.P256() {
				continue
			}
		case ed25519.PublicKey:
		default:
			continue
		}
		keys = append(keys, publicKey{key: key})
	}
	return keys, nil
}
