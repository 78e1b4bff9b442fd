package jwtauth

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestEnsureLocalIssuer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // created on first use
	cfg, err := EnsureLocalIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, LocalIssuerFile)
	want := Config{Issuers: []string{LocalIssuer}, Audience: DefaultAudience, JWKSFile: path}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("config %+v, want %+v", cfg, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", st.Mode().Perm())
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Idempotent: the second call keeps the key.
	cfg2, err := EnsureLocalIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg2, cfg) || string(first) != string(second) {
		t.Errorf("second call changed the key or config:\n%s\n%s", first, second)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only the key file", len(entries))
	}

	// MintLocal's token verifies with the config, as a mutating call once.
	tok, err := MintLocal(dir, "demo", []string{ScopeWrite}, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := mustVerifier(t, cfg)
	c, err := v.Authenticate(context.Background(), tok, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Issuer != LocalIssuer || c.Org != "demo" || c.Subject != LocalSubject || !c.HasScope(ScopeRead) || !c.HasScope(ScopeWrite) ||
		c.HasScope(ScopeAdmin) || c.ExpiresAt.Sub(c.IssuedAt) != DefaultMaxLifetime || c.ID == "" {
		t.Errorf("claims %+v", c)
	}
	if _, err := v.Authenticate(context.Background(), tok, true); err == nil {
		t.Error("a replayed local token was accepted on a mutating call")
	}
	again, err := MintLocal(dir, "demo", []string{ScopeWrite}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Authenticate(context.Background(), again, true); err != nil {
		t.Errorf("a second minted token (fresh jti): %v", err)
	}

	// A token of another data dir's key does not verify.
	other, err := MintLocal(t.TempDir(), "demo", []string{ScopeWrite}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Authenticate(context.Background(), other, false); err == nil {
		t.Error("a token of another local key was accepted")
	}
}

func TestMintLocalRejects(t *testing.T) {
	dir := t.TempDir()
	for name, call := range map[string]func() (string, error){
		"ttl over 15m":  func() (string, error) { return MintLocal(dir, "demo", []string{ScopeRead}, 16*time.Minute) },
		"negative ttl":  func() (string, error) { return MintLocal(dir, "demo", []string{ScopeRead}, -time.Minute) },
		"no org":        func() (string, error) { return MintLocal(dir, "", []string{ScopeRead}, 0) },
		"no scope":      func() (string, error) { return MintLocal(dir, "demo", nil, 0) },
		"unknown scope": func() (string, error) { return MintLocal(dir, "demo", []string{"loops:wirte"}, 0) },
		"no data dir":   func() (string, error) { return MintLocal("", "demo", []string{ScopeRead}, 0) },
	} {
		if tok, err := call(); err == nil {
			t.Errorf("%s: minted %s", name, tok)
		}
	}
}

// TestEnsureLocalIssuerConcurrent: processes racing to create the key all end up with the same one.
func TestEnsureLocalIssuerConcurrent(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	toks := make([]string, 8)
	errs := make([]error, 8)
	for i := range toks {
		wg.Go(func() { toks[i], errs[i] = MintLocal(dir, "demo", []string{ScopeRead}, time.Minute) })
	}
	wg.Wait()
	cfg, err := EnsureLocalIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := mustVerifier(t, cfg)
	for i, tok := range toks {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if _, err := v.Authenticate(context.Background(), tok, false); err != nil {
			t.Errorf("token %d: %v", i, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in the data dir, want the key file alone (no temporary file left)", len(entries))
	}
}

func TestLocalIssuerKeyFileChecks(t *testing.T) {
	dir := t.TempDir()
	if _, err := EnsureLocalIssuer(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, LocalIssuerFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureLocalIssuer(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key file readable by others: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"kty":"OKP","crv":"Ed25519","x":"AAAA","d":"AAAA"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := MintLocal(dir, "demo", []string{ScopeRead}, 0); err == nil {
		t.Error("a malformed key file was used")
	}
}
