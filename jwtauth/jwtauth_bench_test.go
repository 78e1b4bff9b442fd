package jwtauth

import (
	"context"
	"testing"
)

// BenchmarkAuthenticate is the cost of one verified request per algorithm, a read and a
// mutating call (which also records the jti): the loop runtime pays it on every call.
func BenchmarkAuthenticate(b *testing.B) {
	clk := newClock()
	signers := []signer{rsaSigner(b, "rsa"), ecSigner(b, "ec"), edSigner(b, "ed")}
	v := mustVerifier(b, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(b, "keys.json", jwks(b, signers...)), Now: clk.Now})
	ctx := context.Background()
	for _, s := range signers {
		for _, mutating := range []bool{false, true} {
			name := s.method.Alg() + "/read"
			if mutating {
				name = s.method.Alg() + "/mutating"
			}
			b.Run(name, func(b *testing.B) {
				toks := make([]string, b.N)
				for i := range toks {
					toks[i] = s.sign(b, claimsAt(clk.Now()))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if _, err := v.Authenticate(ctx, toks[i], mutating); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMintLocal is the cost of one `supplyplan token` signature (the key file cached).
func BenchmarkMintLocal(b *testing.B) {
	dir := b.TempDir()
	if _, err := EnsureLocalIssuer(dir); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MintLocal(dir, "demo", []string{ScopeWrite}, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticateEdDSA compares one Ed25519 read verification with the typed decoding and
// with the former golang-jwt MapClaims parsing (reference_test.go), in the same run.
func BenchmarkAuthenticateEdDSA(b *testing.B) {
	clk := newClock()
	ed := edSigner(b, "ed")
	v := mustVerifier(b, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(b, "keys.json", jwks(b, ed)), Now: clk.Now})
	ref := newReference(v)
	ctx := context.Background()
	tok := ed.sign(b, claimsAt(clk.Now()))
	for _, impl := range []struct {
		name string
		auth func(context.Context, string, bool) (Claims, error)
	}{{"typed", v.Authenticate}, {"mapclaims", ref.Authenticate}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if _, err := impl.auth(ctx, tok, false); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time per verification (GC included): steadier than ns/op on a shared machine.
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}
