// Package outbound delivers what the service sends out: webhook and chat POSTs over HTTP and
// alert e-mails over SMTP. It refuses destinations that are not globally reachable (loopback,
// private, link-local, carrier-grade NAT, documentation, benchmarking, reserved, multicast and the
// rest of the IANA special-purpose registries, also when carried inside an IPv6 address), at
// registration and again at connect time (against DNS rebinding), unless the operator allows them.
package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/netip"
	"net/smtp"
	"net/textproto"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/supplyplan/supplyplan"
)

// Config configures the sender.
type Config struct {
	// AllowPrivate lets destinations resolve to addresses that are not globally reachable
	// (tests, on-premises receivers): --webhook-allow-private.
	AllowPrivate bool
	// Timeout bounds one HTTP attempt or one SMTP session when the context has no earlier
	// deadline (default 10 s).
	Timeout   time.Duration
	UserAgent string

	// SMTP: Addr host:port ("" disables e-mail), From address, optional Username/Password (PLAIN
	// auth, only over TLS or to localhost), StartTLS "auto" (when offered), "always" or "never".
	SMTPAddr     string
	SMTPFrom     string
	SMTPUsername string
	SMTPPassword string
	SMTPStartTLS string
	// SMTPRootCAs verifies the SMTP server's certificate (nil: system roots); SMTPInsecure skips
	// verification.
	SMTPRootCAs  *x509.CertPool
	SMTPInsecure bool
}

// Sender implements supplyplan.Sender.
type Sender struct {
	cfg    Config
	client *http.Client
}

var errPrivate = errors.New("destination is not globally reachable")

// allowHint tells the caller how an operator allows such destinations.
const allowHint = "destinations that are not globally reachable are refused unless the server runs with " +
	"--webhook-allow-private (SUPPLYPLAN_WEBHOOK_ALLOW_PRIVATE=true)"

// New returns a sender with a pooled HTTP client that does not follow redirects.
func New(cfg Config) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "Supplyplan-Webhooks/1.0"
	}
	if cfg.SMTPStartTLS == "" {
		cfg.SMTPStartTLS = "auto"
	}
	s := &Sender{cfg: cfg}
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: s.control}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	s.client = &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return s
}

// Close releases idle connections.
func (s *Sender) Close() { s.client.CloseIdleConnections() }

// control refuses connections to addresses that are not globally reachable. It runs after DNS
// resolution, on the address actually dialled, so a name that resolved to a public address at
// registration and to a private one now (DNS rebinding) is refused too.
func (s *Sender) control(_, address string, _ syscall.RawConn) error {
	if s.cfg.AllowPrivate {
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: cannot read dialled address %q", errPrivate, host)
	}
	if why := Refusal(a); why != "" {
		return fmt.Errorf("%w: %s is %s; %s", errPrivate, a.WithZone(""), why, allowHint)
	}
	return nil
}

// CheckURL refuses a URL whose host is, or resolves to, an address that is not globally
// reachable (VALIDATION_ERROR on field), with the same table the connection guard uses. Host
// names ending in a number that are not a dotted-decimal IPv4 address ("127.1", "0x7f000001",
// "2130706433") are refused, since resolvers disagree on them, and "localhost" names are refused
// without asking DNS.
func (s *Sender) CheckURL(ctx context.Context, field, raw string) error {
	if s.cfg.AllowPrivate {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return supplyplan.Invalid(field, "must be an absolute http or https URL")
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if why := Refusal(a); why != "" {
			return supplyplan.Invalid(field, "host %s is %s; %s", host, why, allowHint)
		}
		return nil
	}
	if a, numeric := numericHost(host); numeric {
		if a.IsValid() {
			return supplyplan.Invalid(field, "host %q is an IPv4 address in a non-standard notation (%s); write addresses in dotted-decimal form", host, a)
		}
		return supplyplan.Invalid(field, "host %q ends in a number but is not a valid IPv4 address", host)
	}
	if localhostName(host) {
		return supplyplan.Invalid(field, "host %q is the loopback interface (RFC 6761); %s", host, allowHint)
	}
	// A name that does not resolve here and now is accepted: it may resolve where and when the
	// service delivers (a closed network, a record not published yet), and every connection checks
	// the resolved addresses again. A name that resolves to a refused address is refused now.
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(lctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if why := Refusal(a); why != "" {
			return supplyplan.Invalid(field, "host %q resolves to %s, %s; %s", host, a.WithZone(""), why, allowHint)
		}
	}
	return nil
}

// Send performs one attempt. StatusCode is the HTTP status or the SMTP reply code; -1 marks a
// failure that retrying cannot fix (a refused address, e-mail not configured).
func (s *Sender) Send(ctx context.Context, m supplyplan.OutboundMessage) supplyplan.SendResult {
	start := time.Now()
	var r supplyplan.SendResult
	if m.Channel == supplyplan.DestEmail {
		r = s.mail(ctx, m)
	} else {
		r = s.post(ctx, m)
	}
	r.Latency = time.Since(start)
	return r
}

func (s *Sender) post(ctx context.Context, m supplyplan.OutboundMessage) supplyplan.SendResult {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return supplyplan.SendResult{StatusCode: -1, Err: fmt.Errorf("build request: %w", err)}
	}
	for k, v := range m.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", s.cfg.UserAgent)
	res, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, errPrivate) {
			return supplyplan.SendResult{StatusCode: -1, Err: privateErr(err)}
		}
		return supplyplan.SendResult{Err: shortErr(err)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return supplyplan.SendResult{StatusCode: res.StatusCode, Err: fmt.Errorf("HTTP %d", res.StatusCode)}
	}
	return supplyplan.SendResult{StatusCode: res.StatusCode}
}

// privateErr returns the guard's own error from the dial error chain around it.
func privateErr(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if errors.Is(e, errPrivate) && strings.HasPrefix(e.Error(), errPrivate.Error()) {
			return e
		}
	}
	return errPrivate
}

// shortErr drops the request line net/http wraps around transport errors.
func shortErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

var errNoSMTP = errors.New("e-mail delivery is not configured on this server (--smtp-addr)")

// mail sends one plain-text e-mail; SMTP replies map to StatusCode (250 on success).
func (s *Sender) mail(ctx context.Context, m supplyplan.OutboundMessage) supplyplan.SendResult {
	if s.cfg.SMTPAddr == "" || s.cfg.SMTPFrom == "" {
		return supplyplan.SendResult{StatusCode: -1, Err: errNoSMTP}
	}
	deadline := time.Now().Add(s.cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn, err := (&net.Dialer{Deadline: deadline}).DialContext(ctx, "tcp", s.cfg.SMTPAddr)
	if err != nil {
		return supplyplan.SendResult{Err: fmt.Errorf("connect to SMTP server: %w", err)}
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	host, _, _ := net.SplitHostPort(s.cfg.SMTPAddr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return smtpResult(err)
	}
	defer c.Close()
	if err := c.Hello("supplyplan"); err != nil {
		return smtpResult(err)
	}
	if s.cfg.SMTPStartTLS != "never" {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(&tls.Config{ServerName: host, RootCAs: s.cfg.SMTPRootCAs, InsecureSkipVerify: s.cfg.SMTPInsecure}); err != nil {
				return supplyplan.SendResult{Err: fmt.Errorf("STARTTLS: %w", err)}
			}
		} else if s.cfg.SMTPStartTLS == "always" {
			return supplyplan.SendResult{Err: errors.New("the SMTP server does not offer STARTTLS (--smtp-starttls always)")}
		}
	}
	if s.cfg.SMTPUsername != "" {
		if err := c.Auth(smtp.PlainAuth("", s.cfg.SMTPUsername, s.cfg.SMTPPassword, host)); err != nil {
			return smtpResult(err)
		}
	}
	if err := c.Mail(s.cfg.SMTPFrom); err != nil {
		return smtpResult(err)
	}
	if err := c.Rcpt(m.To); err != nil {
		return smtpResult(err)
	}
	w, err := c.Data()
	if err != nil {
		return smtpResult(err)
	}
	if _, err := w.Write(buildMail(s.cfg.SMTPFrom, m.To, m.Subject, m.Text)); err != nil {
		return smtpResult(err)
	}
	if err := w.Close(); err != nil {
		return smtpResult(err)
	}
	_ = c.Quit()
	return supplyplan.SendResult{StatusCode: 250}
}

func smtpResult(err error) supplyplan.SendResult {
	var te *textproto.Error
	if errors.As(err, &te) {
		return supplyplan.SendResult{StatusCode: te.Code, Err: fmt.Errorf("SMTP %d %s", te.Code, te.Msg)}
	}
	return supplyplan.SendResult{Err: err}
}

func buildMail(from, to, subject, text string) []byte {
	var b bytes.Buffer
	h := textproto.MIMEHeader{}
	h.Set("From", from)
	h.Set("To", to)
	h.Set("Subject", mime.QEncoding.Encode("utf-8", subject))
	h.Set("Date", time.Now().UTC().Format(time.RFC1123Z))
	h.Set("Message-ID", "<"+supplyplan.NewID("msg")+"@supplyplan>")
	h.Set("MIME-Version", "1.0")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Transfer-Encoding", "quoted-printable")
	for _, k := range []string{"From", "To", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type", "Content-Transfer-Encoding"} {
		b.WriteString(k + ": " + h.Get(k) + "\r\n")
	}
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(strings.ReplaceAll(text, "\n", "\r\n")))
	_ = qp.Close()
	return b.Bytes()
}

var _ supplyplan.Sender = (*Sender)(nil)
