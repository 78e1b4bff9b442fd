package supplyplan

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// WebhookSecretPrefix starts every outbound signing secret (Standard Webhooks).
const WebhookSecretPrefix = "whsec_"

// NewWebhookSecret returns a fresh signing secret: whsec_ + base64 of 32 random bytes.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// DecodeWebhookSecret returns the key bytes of a whsec_ secret.
func DecodeWebhookSecret(secret string) ([]byte, error) {
	if !strings.HasPrefix(secret, WebhookSecretPrefix) {
		return nil, errors.New("secret must start with whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, WebhookSecretPrefix))
	if err != nil {
		return nil, err
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, errors.New("secret must hold 24 to 64 bytes")
	}
	return key, nil
}

// SignWebhook returns the Standard Webhooks signature header value for one message: one
// "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" per secret, space-separated (several secrets
// while a rotated one is still honoured).
func SignWebhook(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	var parts []string
	for _, s := range secrets {
		key, err := DecodeWebhookSecret(s)
		if err != nil {
			return "", err
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
		mac.Write([]byte{'.'})
		mac.Write(body)
		parts = append(parts, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(parts, " "), nil
}

// PaymentSignatureTolerance is how far the t= of an inbound payment-provider signature may be
// from now.
const PaymentSignatureTolerance = 300 * time.Second

// Reasons of an inbound signature rejection.
var (
	ErrSignatureMissing = errors.New("missing payment-provider-signature header")
	ErrSignatureFormat  = errors.New("malformed payment-provider-signature header")
	ErrSignatureStale   = errors.New("signature timestamp outside the tolerance")
	ErrSignatureInvalid = errors.New("no signature matches the payload")
)

// VerifyPaymentSignature checks a Stripe-style header "t=<unix>,v1=<hex HMAC-SHA256(secret,
// "<t>.<body>")>" (several v1 entries allowed; the secret is used as-is) against the raw body,
// with the given tolerance around now. Comparisons are constant-time.
func VerifyPaymentSignature(header string, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrSignatureMissing
	}
	var ts string
	var sigs [][]byte
	for _, item := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return ErrSignatureFormat
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				continue // a malformed candidate never matches; others may
			}
			sigs = append(sigs, b)
		}
	}
	if ts == "" || len(sigs) == 0 {
		return ErrSignatureFormat
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrSignatureFormat
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrSignatureStale
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	match := false
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			match = true
		}
	}
	if !match {
		return ErrSignatureInvalid
	}
	return nil
}

// PaymentSignatureHeader builds a header value for tests and tools: t and one v1 per secret.
func PaymentSignatureHeader(body []byte, t time.Time, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	parts := []string{"t=" + ts}
	for _, s := range secrets {
		mac := hmac.New(sha256.New, []byte(s))
		mac.Write([]byte(ts + "."))
		mac.Write(body)
		parts = append(parts, "v1="+hex.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(parts, ",")
}
