package jwtauth

import (
	"context"
	"errors"
	"testing"
)

// FuzzAuthenticate: whatever the bearer string, Authenticate returns claims or an *Error with a
// 401, never panics, and accepts nothing it was not given a valid signature for.
func FuzzAuthenticate(f *testing.F) {
	clk := newClock()
	ed := edSigner(f, "ed-1")
	v := mustVerifier(f, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(f, "keys.json", jwks(f, ed)), Now: clk.Now})
	valid := ed.sign(f, claimsAt(clk.Now()))
	for _, seed := range []string{valid, "Bearer " + valid, "", "Bearer", "a.b.c", "e30.e30.", valid[:len(valid)-2] + "AA",
		"eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0."} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, bearer string) {
		c, err := v.Authenticate(context.Background(), bearer, false)
		if err == nil {
			if c.Issuer != testIssuer || c.Org == "" || c.ID == "" || c.Subject == "" {
				t.Fatalf("accepted %q with claims %+v", bearer, c)
			}
			return
		}
		var ae *Error
		if !errors.As(err, &ae) || ae.Status != 401 || ae.Code == "" || ae.Description == "" {
			t.Fatalf("%q: error %v (%T)", bearer, err, err)
		}
	})
}
