package jwtauth

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"filippo.io/edwards25519"
	"github.com/golang-jwt/jwt/v5"
)

// stdVerify is crypto/ed25519's answer, refusing a key of the wrong length as golang-jwt does.
func stdVerify(pub, msg, sig []byte) bool {
	return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, msg, sig)
}

// decodedVerify is the decoded key's answer: a key that does not decode refuses everything.
func decodedVerify(pub, msg, sig []byte) bool {
	k, ok := newEd25519Key(pub)
	return ok && k.verify(msg, sig)
}

// TestEd25519VerifyMatchesTheStandardLibrary: the verification with a decoded key accepts exactly
// what crypto/ed25519.Verify accepts: valid signatures, and none altered in any byte, with S not
// reduced, with the top bits of S set, of another message or key, of the wrong length, nor under
// keys that are not points (or are small-order points, which the standard library takes as keys).
func TestEd25519VerifyMatchesTheStandardLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 11))
	seed := make([]byte, ed25519.SeedSize)
	l, _ := hex.DecodeString("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010") // the group order, little endian
	accepted := 0
	check := func(what string, pub, msg, sig []byte) {
		t.Helper()
		want, got := stdVerify(pub, msg, sig), decodedVerify(pub, msg, sig)
		if got != want {
			t.Fatalf("%s: decoded key says %v, crypto/ed25519 %v (pub %x sig %x)", what, got, want, pub, sig)
		}
		if got {
			accepted++
		}
	}
	for i := range 200 {
		for j := range seed {
			seed[j] = byte(rng.Uint32())
		}
		priv := ed25519.NewKeyFromSeed(seed)
		pub := priv.Public().(ed25519.PublicKey)
		msg := make([]byte, rng.IntN(300))
		for j := range msg {
			msg[j] = byte(rng.Uint32())
		}
		sig := ed25519.Sign(priv, msg)
		check("valid", pub, msg, sig)
		alt := append([]byte(nil), sig...)
		alt[rng.IntN(len(alt))] ^= 1 << rng.IntN(8)
		check("altered signature", pub, msg, alt)
		if len(msg) > 0 {
			m := append([]byte(nil), msg...)
			m[rng.IntN(len(m))] ^= 1
			check("other message", pub, m, sig)
		}
		other := ed25519.NewKeyFromSeed(append(seed[1:], byte(i))).Public().(ed25519.PublicKey)
		check("other key", other, msg, sig)
		// S + L: the same point, not reduced (refused by both).
		var s edwards25519.Scalar
		if _, err := s.SetCanonicalBytes(sig[32:]); err != nil {
			t.Fatal(err)
		}
		sum := addLE(sig[32:], l)
		unreduced := append(append([]byte(nil), sig[:32]...), sum...)
		check("S not reduced", pub, msg, unreduced)
		high := append([]byte(nil), sig...)
		high[63] |= 0x80
		check("top bits of S", pub, msg, high)
		check("short signature", pub, msg, sig[:63])
		check("long signature", pub, msg, append(append([]byte(nil), sig...), 0))
		badKey := append([]byte(nil), pub...)
		badKey[rng.IntN(32)] ^= 1 << rng.IntN(8)
		check("altered key", badKey, msg, sig)
		check("short key", pub[:31], msg, sig)
	}
	// Keys that are no points, a non-canonical y (p+1: refused or taken as 1, as the standard
	// library does) and small-order points (the identity: any S with R = [S]B verifies).
	ident := make([]byte, 32)
	ident[0] = 1
	pPlus1, _ := hex.DecodeString("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
	notPoint, _ := hex.DecodeString("0200000000000000000000000000000000000000000000000000000000000000")
	for _, pub := range [][]byte{ident, pPlus1, notPoint} {
		var sc edwards25519.Scalar
		one := make([]byte, 32)
		one[0] = 5
		if _, err := sc.SetCanonicalBytes(one); err != nil {
			t.Fatal(err)
		}
		r := new(edwards25519.Point).ScalarBaseMult(&sc)
		sig := append(r.Bytes(), one...)
		check("special key", pub, []byte("m"), sig)
	}
	if accepted < 200 {
		t.Fatalf("only %d signatures were accepted: the valid ones did not verify", accepted)
	}
}

// addLE adds two 32-byte little-endian numbers (mod 2^256).
func addLE(a, b []byte) []byte {
	out := make([]byte, 32)
	carry := 0
	for i := range 32 {
		v := int(a[i]) + int(b[i]) + carry
		out[i], carry = byte(v), v>>8
	}
	return out
}

// FuzzEd25519Verify: on any key, message and signature bytes, and on a signature of the message
// under a key from the seed with one byte changed, the decoded key answers as crypto/ed25519.
func FuzzEd25519Verify(f *testing.F) {
	f.Add(make([]byte, 32), []byte("m"), make([]byte, 64), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, seed, msg, sig []byte, at, flip uint8) {
		if a, b := stdVerify(seed, msg, sig), decodedVerify(seed, msg, sig); a != b {
			t.Fatalf("raw bytes: crypto/ed25519 %v, decoded key %v", a, b)
		}
		s := make([]byte, ed25519.SeedSize)
		copy(s, seed)
		priv := ed25519.NewKeyFromSeed(s)
		pub := priv.Public().(ed25519.PublicKey)
		good := ed25519.Sign(priv, msg)
		good[int(at)%len(good)] ^= flip
		if a, b := stdVerify(pub, msg, good), decodedVerify(pub, msg, good); a != b {
			t.Fatalf("signature changed at %d by %x: crypto/ed25519 %v, decoded key %v", at, flip, a, b)
		}
	})
}

// TestEd25519KeysDecodedOnce: a Verifier keeps each Ed25519 key it verifies with decoded, tokens
// still verify (and altered ones do not), and a key that is not a point is refused as golang-jwt
// refuses it.
func TestEd25519KeysDecodedOnce(t *testing.T) {
	clk := newClock()
	ed := edSigner(t, "ed-1")
	v := mustVerifier(t, Config{Issuers: []string{testIssuer}, JWKSFile: writeFile(t, "keys.json", jwks(t, ed)), Now: clk.Now})
	tok := ed.sign(t, claimsAt(clk.Now()))
	for range 3 {
		if _, err := v.Authenticate(context.Background(), tok, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.edKeys.n.Load(); n != 1 {
		t.Fatalf("%d keys decoded, want 1", n)
	}
	i := len(tok) - 10 // inside the signature, whose every bit there counts
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	bad := tok[:i] + string(c) + tok[i+1:]
	if _, err := v.Authenticate(context.Background(), bad, false); err == nil {
		t.Fatal("an altered signature verified")
	}
	notPoint := make(ed25519.PublicKey, 32)
	notPoint[0] = 2
	if err := v.verifySignature(jwt.SigningMethodEdDSA, "a.b", []byte("a.b"), make([]byte, 64), notPoint); err == nil {
		t.Fatal("a key that is no point verified a signature")
	}
	if k, ok := v.edKeys.get(notPoint); ok || k != nil {
		t.Fatal("a key that is no point decoded")
	}
}
