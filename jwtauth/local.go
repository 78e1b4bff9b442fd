package jwtauth

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/fsutil"
)

// Local issuer for embedded defaults (no issuer configured): an Ed25519 key in
// <dataDir>/loop-issuer.jwk (0600), created on first use; its public JWKS is served by the
// verifier config it returns.
const LocalIssuer = "supplyplan-local"

// LocalIssuerFile is the name of the local issuer's key file in the data dir.
const LocalIssuerFile = "loop-issuer.jwk"

// LocalSubject is the `sub` of the tokens MintLocal signs.
const LocalSubject = "supplyplan-token"

// localKeyFile is the JWK stored in the key file: the public members and the private `d`.
type localKeyFile struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	D   string `json:"d"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// EnsureLocalIssuer creates the local issuer's key in dataDir if it is missing and returns a
// Config that trusts it: issuer LocalIssuer, audience DefaultAudience, the key file as JWKSFile
// (only its public members are read for verifying).
func EnsureLocalIssuer(dataDir string) (Config, error) {
	path, _, _, err := localKey(dataDir)
	if err != nil {
		return Config{}, err
	}
	return Config{Issuers: []string{LocalIssuer}, Audience: DefaultAudience, JWKSFile: path}, nil
}

// MintLocal signs with the local key (created if missing) a token for org with scopes, valid for
// ttl (0 means 15m; at most 15m), with a fresh jti, `sub` LocalSubject and audience
// DefaultAudience.
func MintLocal(dataDir, org string, scopes []string, ttl time.Duration) (string, error) {
	switch {
	case ttl == 0:
		ttl = DefaultMaxLifetime
	case ttl < time.Second || ttl > DefaultMaxLifetime:
		return "", fmt.Errorf("ttl %s: want between 1s and %s", ttl, DefaultMaxLifetime)
	}
	if strings.TrimSpace(org) == "" || len(org) > maxClaimBytes || strings.ContainsFunc(org, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", errors.New("org: want an organization id or slug")
	}
	if len(scopes) == 0 {
		return "", fmt.Errorf("scopes: want at least one of %s, %s, %s", ScopeRead, ScopeWrite, ScopeAdmin)
	}
	for _, s := range scopes {
		if s != ScopeRead && s != ScopeWrite && s != ScopeAdmin {
			return "", fmt.Errorf("scope %q: want %s, %s or %s", s, ScopeRead, ScopeWrite, ScopeAdmin)
		}
	}
	_, key, kid, err := localKey(dataDir)
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("jti: %w", err)
	}
	now := time.Now().Truncate(time.Second)
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss":   LocalIssuer,
		"aud":   DefaultAudience,
		"sub":   LocalSubject,
		"org":   org,
		"scope": strings.Join(scopes, " "),
		"iat":   now.Unix(),
		"exp":   now.Add(ttl).Unix(),
		"jti":   base64.RawURLEncoding.EncodeToString(jti),
	})
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign local token: %w", err)
	}
	return s, nil
}

// localKey reads the local issuer's key from dataDir, creating it first when it does not exist.
func localKey(dataDir string) (path string, key ed25519.PrivateKey, kid string, err error) {
	if strings.TrimSpace(dataDir) == "" {
		return "", nil, "", errors.New("local issuer: a data dir is required")
	}
	path = filepath.Join(dataDir, LocalIssuerFile)
	key, kid, err = readLocalKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createLocalKey(dataDir, path); err == nil {
			key, kid, err = readLocalKey(path)
		}
	}
	return path, key, kid, err
}

// parsedKeys caches the key files read, by path, while their size and modification time stay the
// same: a loop minting tokens (the benchmark's load generator) then pays one stat per token
// instead of a read, a parse and a scalar multiplication.
var parsedKeys sync.Map // path -> parsedKey

type parsedKey struct {
	size    int64
	modTime time.Time
	key     ed25519.PrivateKey
	kid     string
}

// readLocalKey reads and checks the key file: mode 0600 (no access for group or others), an
// Ed25519 JWK whose x is the public key of d.
func readLocalKey(path string) (ed25519.PrivateKey, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, "", fmt.Errorf("local issuer key %s: mode %04o lets others read it; chmod 600 it", path, st.Mode().Perm())
	}
	if c, ok := parsedKeys.Load(path); ok {
		if pk := c.(parsedKey); pk.size == st.Size() && pk.modTime.Equal(st.ModTime()) {
			return pk.key, pk.kid, nil
		}
	}
	key, kid, err := parseLocalKey(path)
	if err == nil {
		parsedKeys.Store(path, parsedKey{size: st.Size(), modTime: st.ModTime(), key: key, kid: kid})
	}
	return key, kid, err
}

func parseLocalKey(path string) (ed25519.PrivateKey, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var f localKeyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, "", fmt.Errorf("local issuer key %s: %w", path, err)
	}
	seed, err := base64.RawURLEncoding.DecodeString(f.D)
	if err != nil || f.Kty != "OKP" || f.Crv != "Ed25519" || len(seed) != ed25519.SeedSize {
		return nil, "", fmt.Errorf("local issuer key %s: want an Ed25519 JWK with d", path)
	}
	key := ed25519.NewKeyFromSeed(seed)
	pub := supplyplan.LoopPublicJWK(key.Public().(ed25519.PublicKey))
	if f.X != pub.X || f.Kid != pub.Kid {
		return nil, "", fmt.Errorf("local issuer key %s: x or kid does not match d", path)
	}
	return key, pub.Kid, nil
}

// createLocalKey writes a new key to path unless a file is there already: a temporary file,
// fsynced, then hard-linked to path (which fails when another process created it first: its key
// wins), then the directory fsynced. A crash leaves either no key file or a whole one.
func createLocalKey(dataDir, path string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("local issuer: %w", err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("local issuer: generate key: %w", err)
	}
	pub := supplyplan.LoopPublicJWK(key.Public().(ed25519.PublicKey))
	data, err := json.MarshalIndent(localKeyFile{Kty: "OKP", Crv: "Ed25519", X: pub.X,
		D: base64.RawURLEncoding.EncodeToString(key.Seed()), Kid: pub.Kid, Use: "sig", Alg: "EdDSA"}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dataDir, "."+LocalIssuerFile+"-*"+fsutil.TempSuffix) // mode 0600
	if err != nil {
		return fmt.Errorf("local issuer: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("local issuer: write key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("local issuer: %w", err)
	}
	return fsutil.SyncDir(dataDir)
}
