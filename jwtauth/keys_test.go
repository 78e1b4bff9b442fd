package jwtauth

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestJWKSURLRotation: the issuer rotates its key. A token under the new kid makes the verifier
// fetch the set again, at most once per 10 s of the configured clock; a key removed from the set
// stops verifying once the set is fetched again.
func TestJWKSURLRotation(t *testing.T) {
	clk := newClock()
	oldKey, newKey, third := edSigner(t, "2026-10"), ecSigner(t, "2026-11"), edSigner(t, "2026-12")
	srv := newJWKSServer(t, jwks(t, oldKey))
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSURL: srv.URL + "/jwks", Now: clk.Now})
	ctx := context.Background()
	auth := func(s signer) error {
		_, err := v.Authenticate(ctx, s.sign(t, claimsAt(clk.Now())), false)
		return err
	}
	wantFetches := func(n int64) {
		t.Helper()
		if got := srv.fetches.Load(); got != n {
			t.Fatalf("%d fetches, want %d", got, n)
		}
	}

	if err := auth(oldKey); err != nil { // waits for the fetch New started
		t.Fatal(err)
	}
	wantFetches(1)
	if err := auth(oldKey); err != nil { // cached
		t.Fatal(err)
	}
	wantFetches(1)

	srv.serve(jwks(t, newKey)) // rotation: the old key is retired
	clk.Advance(3 * time.Second)
	wantAuthError(t, auth(newKey), http.StatusUnauthorized, CodeInvalidToken, "not a known signing key")
	wantFetches(1) // 3 s after the last fetch: no refetch
	clk.Advance(6 * time.Second)
	wantAuthError(t, auth(newKey), http.StatusUnauthorized, CodeInvalidToken, "not a known signing key")
	wantFetches(1) // 9 s

	clk.Advance(time.Second) // 10 s: one refetch, shared by concurrent callers
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	tok := newKey.sign(t, claimsAt(clk.Now()))
	for range 16 {
		wg.Go(func() {
			_, err := v.Authenticate(ctx, tok, false)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantFetches(2)

	// The retired key is unknown now, and asking for it again within 10 s fetches nothing.
	wantAuthError(t, auth(oldKey), http.StatusUnauthorized, CodeInvalidToken, "not a known signing key")
	wantFetches(2)
	clk.Advance(10 * time.Second)
	wantAuthError(t, auth(third), http.StatusUnauthorized, CodeInvalidToken, "not a known signing key")
	wantFetches(3)
	wantAuthError(t, auth(third), http.StatusUnauthorized, CodeInvalidToken, "not a known signing key")
	wantFetches(3)
	if err := auth(newKey); err != nil { // known keys never wait for the rate limit
		t.Fatal(err)
	}
	wantFetches(3)
}

// TestJWKSURLFailures: a JWKS that cannot be fetched (status, size, timeout) leaves the verifier
// without keys and the caller with a 401 that names no internals; a later good fetch recovers;
// a failed refetch keeps the keys already known.
func TestJWKSURLFailures(t *testing.T) {
	ed := edSigner(t, "k1")
	good := jwks(t, ed)
	var mu sync.Mutex
	mode := "status"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		m := mode
		mu.Unlock()
		switch m {
		case "status":
			http.Error(w, "secret internal detail", http.StatusInternalServerError)
		case "large":
			_, _ = w.Write(append(append([]byte(`{"keys":[`), bytes.Repeat([]byte(" "), maxJWKSBytes)...), ']', '}'))
		case "slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		default:
			_, _ = w.Write(good)
		}
	}))
	defer srv.Close()
	setMode := func(m string) {
		mu.Lock()
		defer mu.Unlock()
		mode = m
	}
	clk := newClock()
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSURL: srv.URL, Now: clk.Now,
		HTTPClient: &http.Client{Timeout: 200 * time.Millisecond}})
	ctx := context.Background()
	auth := func(s signer) error {
		_, err := v.Authenticate(ctx, s.sign(t, claimsAt(clk.Now())), false)
		return err
	}
	for _, m := range []string{"status", "large", "slow"} {
		setMode(m)
		clk.Advance(refetchInterval)
		err := auth(ed)
		wantAuthError(t, err, http.StatusUnauthorized, CodeInvalidToken, "signing keys unavailable")
		if bytes.Contains([]byte(err.Error()), []byte("secret")) {
			t.Fatalf("%s: error leaks the response: %v", m, err)
		}
	}
	setMode("good")
	clk.Advance(refetchInterval)
	if err := auth(ed); err != nil {
		t.Fatal(err)
	}
	setMode("status")
	clk.Advance(refetchInterval)
	wantAuthError(t, auth(edSigner(t, "k2")), http.StatusUnauthorized, CodeInvalidToken, "not a known signing key")
	if err := auth(ed); err != nil {
		t.Fatalf("known key after a failed refetch: %v", err)
	}
}

// TestCandidatesCanceled: a caller whose context ends while a fetch is in flight gets a 401 at
// once instead of waiting.
func TestCandidatesCanceled(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	clk := newClock()
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSURL: srv.URL, Now: clk.Now})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := v.Authenticate(ctx, edSigner(t, "k").sign(t, claimsAt(clk.Now())), false)
	wantAuthError(t, err, http.StatusUnauthorized, CodeInvalidToken, "signing keys unavailable")
}

func TestParseKeysJWKForms(t *testing.T) {
	rs, es, ed := rsaSigner(t, "r"), ecSigner(t, "e"), edSigner(t, "o")
	// A single JWK (the local issuer's file, private member included) is a set of one.
	one := ed.jwk(t)
	one["d"] = "private-part-never-read"
	set, err := parseKeys([]byte(mustJSON(t, one)))
	if err != nil || len(set.keys) != 1 || set.keys[0].kid != "o" {
		t.Fatalf("single JWK: %+v, %v", set, err)
	}
	// Malformed members leave a key out.
	badEC := es.jwk(t)
	badEC["x"] = badEC["y"] // not on the curve
	badRSA := rs.jwk(t)
	badRSA["e"] = "AQ" // e = 1
	wrongAlg := ed.jwk(t)
	wrongAlg["alg"], wrongAlg["kid"] = "RS256", "o2"
	set, err = parseKeys([]byte(`{"keys":[` + mustJSON(t, badEC) + "," + mustJSON(t, badRSA) + "," + mustJSON(t, wrongAlg) + "," + mustJSON(t, rs.jwk(t)) + `]}`))
	if err != nil || len(set.keys) != 1 || set.keys[0].kid != "r" {
		t.Fatalf("got %+v, %v; want only the good RSA key", set, err)
	}
	if keys, res := set.lookup("r", "RS256"); res != keyFound || len(keys) != 1 {
		t.Errorf("lookup r RS256: %v %v", keys, res)
	}
	if _, res := set.lookup("r", "ES256"); res != keyWrongAlg {
		t.Errorf("lookup r ES256: %v, want keyWrongAlg", res)
	}
	if _, res := set.lookup("x", "RS256"); res != keyUnknown {
		t.Errorf("lookup x: %v, want keyUnknown", res)
	}
}
