package supplyplan

import "time"

// ConsoleSession is a signed-in operator console browser. The key secret stays on the server (in
// the session store): every request re-authenticates it, so a revoked key ends its sessions at once.
type ConsoleSession struct {
	ID        string    `json:"id"` // SHA-256 of the cookie value, hex
	Secret    string    `json:"secret"`
	ImportKey string    `json:"importKey,omitempty"` // an import key given on the upload form
	CSRF      string    `json:"csrf"`
	Created   time.Time `json:"created"`
	// Expires is the absolute end; Idle how long the session lives unused.
	Expires time.Time     `json:"expires"`
	Idle    time.Duration `json:"idle"`
}
