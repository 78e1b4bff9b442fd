package jwtauth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"sync"
	"sync/atomic"

	"filippo.io/edwards25519"
	"github.com/golang-jwt/jwt/v5"
)

// Ed25519 signatures are verified as crypto/ed25519.Verify verifies them (RFC 8032 §5.1.7, the
// standard library's checks: a canonical S, [S]B = R + [k]A compared on R's encoding), on the
// same curve arithmetic (filippo.io/edwards25519 is the upstream of the standard library's
// internal package), but with the public key's curve point decoded once per key instead of once
// per token: crypto/ed25519 takes the key as bytes and decodes it, a square root, on every call,
// and offers no verifier for a decoded key. TestEd25519VerifyMatchesTheStandardLibrary and
// FuzzEd25519Verify compare the two on valid, altered and malformed signatures and keys.

// ed25519Key is a public key with its decoded (and negated) curve point.
type ed25519Key struct {
	pub    [ed25519.PublicKeySize]byte
	minusA edwards25519.Point
}

// newEd25519Key decodes pub; false when it is not a valid key (crypto/ed25519.Verify then refuses
// every signature).
func newEd25519Key(pub ed25519.PublicKey) (*ed25519Key, bool) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, false
	}
	var a edwards25519.Point
	if _, err := a.SetBytes(pub); err != nil {
		return nil, false
	}
	k := &ed25519Key{}
	copy(k.pub[:], pub)
	k.minusA.Negate(&a)
	return k, true
}

// verify reports whether sig is a valid Ed25519 signature of message by k: crypto/ed25519's
// verification of a pure Ed25519 signature, step for step.
func (k *ed25519Key) verify(message, sig []byte) bool {
	if len(sig) != ed25519.SignatureSize || sig[63]&224 != 0 {
		return false
	}
	h := sha512.New()
	h.Write(sig[:32])
	h.Write(k.pub[:])
	h.Write(message)
	var digest [sha512.Size]byte
	kh, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		return false // not reached: a SHA-512 digest is 64 bytes
	}
	s, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	// [S]B = R + [k]A  <=>  [k](-A) + [S]B = R
	r := new(edwards25519.Point).VarTimeDoubleScalarBaseMult(kh, &k.minusA, s)
	return bytes.Equal(sig[:32], r.Bytes())
}

// maxDecodedKeys bounds the decoded keys kept: keys come from the trusted key set only (never
// from a token), so this is only a guard against a key set rotated without end.
const maxDecodedKeys = 1024

// decodedKeys caches the decoded Ed25519 keys of a Verifier by their bytes.
type decodedKeys struct {
	m sync.Map // [32]byte -> *ed25519Key, or nil for bytes that are not a valid key
	n atomic.Int64
}

// get returns pub decoded (nil, false when it is not a valid key).
func (d *decodedKeys) get(pub ed25519.PublicKey) (*ed25519Key, bool) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, false
	}
	id := [ed25519.PublicKeySize]byte(pub)
	if v, ok := d.m.Load(id); ok {
		k := v.(*ed25519Key)
		return k, k != nil
	}
	k, ok := newEd25519Key(pub)
	if d.n.Load() < maxDecodedKeys {
		if _, loaded := d.m.LoadOrStore(id, k); !loaded {
			d.n.Add(1)
		}
	}
	return k, ok
}

// verifySignature checks the signature of signing under key with method (the token's algorithm,
// which the key fits): an Ed25519 key with its decoded point, any other through golang-jwt.
func (v *Verifier) verifySignature(method jwt.SigningMethod, signing string, signingBytes, sig []byte, key any) error {
	if pub, ok := key.(ed25519.PublicKey); ok && method == jwt.SigningMethodEdDSA {
		if k, ok := v.edKeys.get(pub); ok {
			if k.verify(signingBytes, sig) {
				return nil
			}
			return jwt.ErrEd25519Verification
		}
	}
	return method.Verify(signing, sig, key)
}
