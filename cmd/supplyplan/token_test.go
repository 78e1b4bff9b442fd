package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/supplyplan/supplyplan/jwtauth"
)

// TestTokenCommand: `supplyplan token` prints one token that the local issuer's config verifies.
func TestTokenCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if err := run([]string{"token", "--data", dir, "--org", "demo", "--scope", "loops:write", "--ttl", "5m"}, &out, &errOut); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	tok := strings.TrimSuffix(out.String(), "\n")
	if tok == "" || strings.ContainsAny(tok, " \n") || strings.Count(tok, ".") != 2 {
		t.Fatalf("stdout %q: want one JWT on one line", out.String())
	}
	cfg, err := jwtauth.EnsureLocalIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jwtauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	c, err := v.Authenticate(context.Background(), "Bearer "+tok, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Org != "demo" || !c.HasScope(jwtauth.ScopeWrite) || c.HasScope(jwtauth.ScopeAdmin) || c.ExpiresAt.Sub(c.IssuedAt).Minutes() != 5 {
		t.Errorf("claims %+v", c)
	}

	out.Reset()
	if err := run([]string{"token", "--data", dir, "--org", "acme", "--scope", "loops:read,loops:admin"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	c, err = v.Authenticate(context.Background(), strings.TrimSpace(out.String()), false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Org != "acme" || strings.Join(c.Scopes, " ") != "loops:read loops:admin" {
		t.Errorf("claims %+v", c)
	}

	for _, args := range [][]string{
		{"token", "--data", dir, "--scope", "loops:read"},
		{"token", "--data", dir, "--org", "demo"},
		{"token", "--data", dir, "--org", "demo", "--scope", "loops:everything"},
		{"token", "--data", dir, "--org", "demo", "--scope", "loops:read", "--ttl", "1h"},
		{"token", "--data", dir, "--org", "demo", "--scope", "loops:read", "extra"},
	} {
		out.Reset()
		if err := run(args, &out, &errOut); err == nil || out.Len() != 0 {
			t.Errorf("%v: err %v, stdout %q; want an error and nothing printed", args[3:], err, out.String())
		}
	}
}
