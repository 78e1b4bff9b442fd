package tools

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan"
)

// Confirmer issues and verifies the confirmation tokens of state-changing tools. A token is
// stateless (any node holding the secret verifies it): HMAC-SHA256 over the organization, the
// tool, a hash of the canonical arguments, the expiry and a random id. Single use is enforced by
// the audit log, which refuses a second claim of the same id.
type Confirmer struct {
	Secret []byte
	TTL    time.Duration // default 5 minutes
	Now    func() time.Time
}

// ConfirmationClaims is what a token binds.
type ConfirmationClaims struct {
	ID       string `json:"n"`
	OrgID    string `json:"o"`
	Tool     string `json:"t"`
	ArgsHash string `json:"a"`
	Expires  int64  `json:"e"` // unix seconds
}

// DefaultConfirmationTTL is how long a confirmation token is valid.
const DefaultConfirmationTTL = 5 * time.Minute

func (c *Confirmer) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Confirmer) ttl() time.Duration {
	if c.TTL > 0 {
		return c.TTL
	}
	return DefaultConfirmationTTL
}

// Issue returns a token for orgID, tool and args (canonical JSON without confirmationToken).
func (c *Confirmer) Issue(orgID, tool string, canonicalArgs []byte) (string, time.Time) {
	exp := c.now().Add(c.ttl()).Truncate(time.Second)
	claims := ConfirmationClaims{ID: supplyplan.NewID("cfm"), OrgID: orgID, Tool: tool, ArgsHash: argsHash(canonicalArgs), Expires: exp.Unix()}
	payload, _ := json.Marshal(claims)
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(c.mac(p)), exp
}

// Verify checks a token against orgID, tool and args; the error names what does not match.
func (c *Confirmer) Verify(token, orgID, tool string, canonicalArgs []byte) (ConfirmationClaims, error) {
	bad := func(msg string) (ConfirmationClaims, error) {
		return ConfirmationClaims{}, supplyplan.Invalid("confirmationToken", "%s", msg)
	}
	p, sig, ok := strings.Cut(token, ".")
	if !ok {
		return bad("is not a confirmation token")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.mac(p)) {
		return bad("is not a valid confirmation token")
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return bad("is not a valid confirmation token")
	}
	var cl ConfirmationClaims
	if err := json.Unmarshal(payload, &cl); err != nil {
		return bad("is not a valid confirmation token")
	}
	switch {
	case cl.OrgID != orgID:
		return bad("was issued for another organization")
	case cl.Tool != tool:
		return bad("was issued for another tool")
	case cl.ArgsHash != argsHash(canonicalArgs):
		return bad("was issued for different arguments; call again without a token")
	case c.now().Unix() > cl.Expires:
		return bad("has expired; call again without a token")
	}
	return cl, nil
}

func (c *Confirmer) mac(payload string) []byte {
	m := hmac.New(sha256.New, c.Secret)
	m.Write([]byte("supplyplan-confirm-v1."))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

func argsHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
