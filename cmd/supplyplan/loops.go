package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/actors"
	sphttp "github.com/supplyplan/supplyplan/http"
	"github.com/supplyplan/supplyplan/internal/fsutil"
	"github.com/supplyplan/supplyplan/jwtauth"
)

// The loop catalog's wiring: its signing key and key set, and its listener.

const (
	// loopSigningKeyFile is where the signing key is generated when none is configured.
	loopSigningKeyFile = "loop-signing-key.pem"
	// loopKeysFile is the JWKS of every key that signed versions in this data dir: the catalog
	// publishes it, so a version signed before a key change still verifies.
	loopKeysFile = "loop-keys.json"
)

// loopCatalogConfig loads (or generates) the signing key and records its public key in the key set.
func (m *Main) loopCatalogConfig() (actors.LoopCatalogConfig, error) {
	cfg := m.Config
	key, err := loopSigningKey(cfg)
	if err != nil {
		return actors.LoopCatalogConfig{}, err
	}
	signer, err := supplyplan.NewLoopSigner(key)
	if err != nil {
		return actors.LoopCatalogConfig{}, err
	}
	keys, err := recordLoopKey(filepath.Join(cfg.DataDir, loopKeysFile), signer.PublicJWK())
	if err != nil {
		return actors.LoopCatalogConfig{}, err
	}
	return actors.LoopCatalogConfig{Signer: signer, Keys: keys, Now: cfg.Clock}, nil
}

// loopSigningKey reads the configured key, or <data>/loop-signing-key.pem, generating that one
// (mode 0600, written atomically and durably) on first start.
func loopSigningKey(cfg Config) (ed25519.PrivateKey, error) {
	if cfg.LoopSigningKey != "" {
		b, err := os.ReadFile(cfg.LoopSigningKey)
		if err != nil {
			return nil, fmt.Errorf("--loop-signing-key: %w", err)
		}
		key, err := supplyplan.ParseLoopSigningKey(b)
		if err != nil {
			return nil, fmt.Errorf("--loop-signing-key %s: %w", cfg.LoopSigningKey, err)
		}
		return key, nil
	}
	path := filepath.Join(cfg.DataDir, loopSigningKeyFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, err := supplyplan.ParseLoopSigningKey(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read loop signing key: %w", err)
	}
	key, err := supplyplan.GenerateLoopSigningKey()
	if err != nil {
		return nil, fmt.Errorf("generate loop signing key: %w", err)
	}
	pem, err := supplyplan.MarshalLoopSigningKey(key)
	if err != nil {
		return nil, err
	}
	if err := fsutil.WriteFileBytes(path, pem, 0o600); err != nil {
		return nil, fmt.Errorf("write loop signing key: %w", err)
	}
	return key, nil
}

// recordLoopKey adds current to the key set stored at path (first, when it is new) and returns
// the set: the current key and every key used before it.
func recordLoopKey(path string, current supplyplan.JWK) (supplyplan.JWKS, error) {
	var set supplyplan.JWKS
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &set); err != nil {
			return set, fmt.Errorf("%s: %w", path, err)
		}
		for _, k := range set.Keys {
			if _, err := k.PublicKey(); err != nil {
				return set, fmt.Errorf("%s: %w", path, err)
			}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return set, fmt.Errorf("read loop key set: %w", err)
	}
	if i := slices.IndexFunc(set.Keys, func(k supplyplan.JWK) bool { return k.Kid == current.Kid }); i >= 0 {
		// Known: the current key goes first, as the one signing now.
		set.Keys = append([]supplyplan.JWK{current}, slices.Delete(set.Keys, i, i+1)...)
		return set, nil
	}
	set.Keys = append([]supplyplan.JWK{current}, set.Keys...)
	out, err := json.MarshalIndent(set, "", "  ")
	if err != nil {
		return set, err
	}
	if err := fsutil.WriteFileBytes(path, append(out, '\n'), 0o600); err != nil {
		return set, fmt.Errorf("write loop key set: %w", err)
	}
	return set, nil
}

// openLoopCatalog starts the loop catalog listener.
func (m *Main) openLoopCatalog() error {
	cfg := m.Config
	if m.bodies.Max() < supplyplan.MaxLoopManifestBytes {
		return fmt.Errorf("--body-bytes-in-flight (%d) must be at least the loop manifest limit (%d)", m.bodies.Max(), supplyplan.MaxLoopManifestBytes)
	}
	access, err := m.accessLog()
	if err != nil {
		return err
	}
	m.Loops = sphttp.NewLoopCatalogServer(sphttp.LoopCatalogConfig{Addr: cfg.LoopCatalogAddr, BodyLimit: cfg.BodyLimit,
		RequestTimeout: cfg.RequestTimeout, Logger: m.Log, BodyBudget: m.bodies, Metrics: m.Metrics, AccessLog: access,
		Owners: m.Owners, NodeID: m.NodeID},
		sphttp.LoopCatalogServices{Auth: m.System.Platform, Loops: m.System.Loops})
	if err := m.Loops.Open(); err != nil {
		return err
	}
	fmt.Fprintf(m.out, "listening loop-catalog http://%s\n", m.Loops.Addr())
	return nil
}

// loopAuthConfig is the JWT verification of the loop runtime: the configured issuers with their
// JWKS URL or file, or (no issuer configured) the local issuer whose key lives in the data dir.
func loopAuthConfig(cfg Config) (jwtauth.Config, error) {
	if strings.TrimSpace(cfg.LoopJWTIssuer) == "" {
		jc, err := jwtauth.EnsureLocalIssuer(cfg.DataDir)
		if err != nil {
			return jc, fmt.Errorf("loop runtime local issuer: %w", err)
		}
		if cfg.LoopJWTAudience != "" {
			jc.Audience = cfg.LoopJWTAudience
		}
		jc.Now = cfg.Clock
		return jc, nil
	}
	jc := jwtauth.Config{Audience: cfg.LoopJWTAudience, JWKSURL: cfg.LoopJWKSURL, JWKSFile: cfg.LoopJWKSFile, Now: cfg.Clock}
	for _, iss := range strings.Split(cfg.LoopJWTIssuer, ",") {
		if iss = strings.TrimSpace(iss); iss != "" {
			jc.Issuers = append(jc.Issuers, iss)
		}
	}
	if (jc.JWKSURL == "") == (jc.JWKSFile == "") {
		return jc, fmt.Errorf("--loop-jwt-issuer needs exactly one of --loop-jwks-url and --loop-jwks-file")
	}
	return jc, nil
}

// openLoopRuntime starts the loop runtime listener with its JWT verifier.
func (m *Main) openLoopRuntime() error {
	cfg := m.Config
	if m.LoopAuth == nil && cfg.LoopAuth != nil {
		m.LoopAuth = cfg.LoopAuth
	}
	if m.LoopAuth == nil {
		jc, err := loopAuthConfig(cfg)
		if err != nil {
			return err
		}
		v, err := jwtauth.New(jc)
		if err != nil {
			return fmt.Errorf("loop runtime JWT verification: %w", err)
		}
		m.LoopAuth, m.loopAuthC = v, v.Close
	}
	access, err := m.accessLog()
	if err != nil {
		return err
	}
	m.Runtime = sphttp.NewLoopRuntimeServer(sphttp.LoopRuntimeConfig{Addr: cfg.LoopRuntimeAddr, BodyLimit: cfg.BodyLimit,
		RequestTimeout: cfg.RequestTimeout, Logger: m.Log, BodyBudget: m.bodies, Metrics: m.Metrics, AccessLog: access,
		Owners: m.Owners, NodeID: m.NodeID},
		sphttp.LoopRuntimeServices{Auth: m.LoopAuth, Runtime: m.System.LoopRuntime})
	if err := m.Runtime.Open(); err != nil {
		return err
	}
	fmt.Fprintf(m.out, "listening loop-runtime http://%s\n", m.Runtime.Addr())
	return nil
}
