package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// mailSink is a real SMTP server (go-smtp) in the test process that keeps every message.
type mailSink struct {
	Addr     string
	mu       sync.Mutex
	msgs     []sunkMail
	user     string
	password string
	tls      bool
}

type sunkMail struct {
	From, To string
	Data     string
	TLS      bool
	Authed   bool
}

// startMailSink starts an SMTP server on a free port. With tlsOn it offers STARTTLS with a
// self-signed certificate; with user set it requires PLAIN auth.
func startMailSink(tb testing.TB, tlsOn bool, user, password string) *mailSink {
	tb.Helper()
	m := &mailSink{user: user, password: password, tls: tlsOn}
	srv := smtp.NewServer(m)
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	if tlsOn {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{selfSigned(tb)}}
	} else {
		srv.AllowInsecureAuth = true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	m.Addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return m
}

func (m *mailSink) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &mailSession{sink: m, conn: c}, nil
}

// Messages returns the received messages.
func (m *mailSink) Messages() []sunkMail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]sunkMail(nil), m.msgs...)
}

type mailSession struct {
	sink     *mailSink
	conn     *smtp.Conn
	from, to string
	authed   bool
}

func (s *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.sink.user || pass != s.sink.password {
			return errors.New("invalid credentials")
		}
		s.authed = true
		return nil
	}), nil
}

func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.sink.user != "" && !s.authed {
		return &smtp.SMTPError{Code: 530, Message: "authentication required"}
	}
	s.from = from
	return nil
}

func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.HasPrefix(to, "nobody@") {
		return &smtp.SMTPError{Code: 550, Message: "no such mailbox"}
	}
	s.to = to
	return nil
}

func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.sink.mu.Lock()
	s.sink.msgs = append(s.sink.msgs, sunkMail{From: s.from, To: s.to, Data: string(b), TLS: isTLS, Authed: s.authed})
	s.sink.mu.Unlock()
	return nil
}

func (s *mailSession) Reset()        {}
func (s *mailSession) Logout() error { return nil }

func selfSigned(tb testing.TB) tls.Certificate {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// hookReceiver is an HTTP receiver for webhooks and chat hooks. It verifies Standard Webhooks
// signatures with its own implementation (not the service's) when it knows a secret.
type hookReceiver struct {
	URL string
	mu  sync.Mutex
	got []hookMsg
	// secrets verify signatures (any may match); status decides the answer (default 200).
	secrets []string
	status  func(n int) int
}

type hookMsg struct {
	Header   http.Header
	Body     []byte
	Verified bool
	VerifyBy string // the secret that verified
	Status   int
}

func startReceiver(tb testing.TB) *hookReceiver {
	tb.Helper()
	h := &hookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		msg := hookMsg{Header: r.Header.Clone(), Body: body}
		for _, s := range h.secrets {
			if verifyStandardWebhook(s, r.Header, body, time.Now()) == nil {
				msg.Verified, msg.VerifyBy = true, s
				break
			}
		}
		msg.Status = 200
		if h.status != nil {
			msg.Status = h.status(len(h.got))
		}
		h.got = append(h.got, msg)
		h.mu.Unlock()
		w.WriteHeader(msg.Status)
	}))
	tb.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

func (h *hookReceiver) SetSecrets(s ...string) {
	h.mu.Lock()
	h.secrets = s
	h.mu.Unlock()
}

func (h *hookReceiver) SetStatus(f func(n int) int) {
	h.mu.Lock()
	h.status = f
	h.mu.Unlock()
}

func (h *hookReceiver) Messages() []hookMsg {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookMsg(nil), h.got...)
}

// OK returns the messages answered 2xx.
func (h *hookReceiver) OK() []hookMsg {
	var out []hookMsg
	for _, m := range h.Messages() {
		if m.Status < 300 {
			out = append(out, m)
		}
	}
	return out
}

// Typed returns the 2xx messages whose payload type is t.
func (h *hookReceiver) Typed(t string) []hookMsg {
	var out []hookMsg
	for _, m := range h.OK() {
		var p struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Body, &p) == nil && p.Type == t {
			out = append(out, m)
		}
	}
	return out
}

// verifyStandardWebhook checks webhook-id, webhook-timestamp and webhook-signature the way the
// Standard Webhooks specification describes, written independently of the service's signer:
// signed content "id.timestamp.body", key = base64 after "whsec_", signature list of
// "v1,<base64>" separated by spaces, timestamp within 5 minutes.
func verifyStandardWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook headers")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return err
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp out of tolerance")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := mac.Sum(nil)
	for _, part := range strings.Fields(sigs) {
		ver, sig, ok := strings.Cut(part, ",")
		if !ok || ver != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

// outboundConfig sets what every outbound test needs: private receivers allowed, quick retries,
// no scheduled evaluation, a fast debounce through the default.
func outboundTestConfig(smtpAddr string) func(*Config) {
	return func(c *Config) {
		c.WebhookAllowPriv = true
		c.RetryBase = 50 * time.Millisecond
		c.AlertEvalInterval = -1
		c.AlertSignalDebounce = 100 * time.Millisecond
		c.SMTPAddr = smtpAddr
		c.SMTPFrom = "alerts@supplyplan.test"
		c.WebhookTimeout = 5 * time.Second
	}
}
