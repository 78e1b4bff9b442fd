package supplyplan

import (
	"context"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
)

// AlertKind is one of the six alert types of the spec.
type AlertKind string

// Alert kinds.
const (
	AlertStockout          AlertKind = "stockout"
	AlertLowATP            AlertKind = "lowAtp"
	AlertForecastDeviation AlertKind = "forecastDeviation"
	AlertExpiry            AlertKind = "expiry"
	AlertSlowMoving        AlertKind = "slowMoving"
	AlertOverstock         AlertKind = "overstock"
)

// AlertKinds lists every alert kind in the spec's order.
var AlertKinds = []AlertKind{AlertStockout, AlertLowATP, AlertForecastDeviation, AlertExpiry, AlertSlowMoving, AlertOverstock}

// Severity ranks an alert.
type Severity string

// Severities, most severe first.
const (
	SeverityCritical Severity = "CRITICAL"
	SeverityHigh     Severity = "HIGH"
	SeverityMedium   Severity = "MEDIUM"
	SeverityLow      Severity = "LOW"
)

// Severities lists every severity, most severe first.
var Severities = []Severity{SeverityCritical, SeverityHigh, SeverityMedium, SeverityLow}

// DestinationType is where an alert goes.
type DestinationType string

// Destination types.
const (
	DestEmail   DestinationType = "EMAIL"
	DestWebhook DestinationType = "WEBHOOK"
	DestChat    DestinationType = "CHAT"
)

// DestinationTypes lists every destination type.
var DestinationTypes = []DestinationType{DestEmail, DestWebhook, DestChat}

// Alert configuration limits.
const (
	MinCooldownMinutes = 5
	MaxCooldownMinutes = 1440
	DefaultCooldown    = 60
	MaxDestinations    = 20
	MaxAlertMessageLen = 2000
	maxOutboundURLLen  = 2048
)

// AlertDestination is one place alerts are delivered to.
type AlertDestination struct {
	ID      string          `json:"id"`
	Type    DestinationType `json:"type"`
	Value   string          `json:"value"`
	Name    string          `json:"name,omitempty"`
	Enabled bool            `json:"enabled"`
	// Secret signs WEBHOOK deliveries (Standard Webhooks, whsec_...); generated when absent.
	Secret string `json:"secret,omitempty"`
	// DisabledReason and DisabledAt are set when the service disabled the destination because it
	// answered 404 or 410; enabling it again clears them.
	DisabledReason string     `json:"disabledReason,omitempty"`
	DisabledAt     *time.Time `json:"disabledAt,omitempty"`
}

// AlertConfig is a tenant's alert configuration.
type AlertConfig struct {
	Enabled         bool               `json:"enabled"`
	Destinations    []AlertDestination `json:"destinations"`
	AlertTypes      map[AlertKind]bool `json:"alertTypes"`
	CooldownMinutes int                `json:"cooldownMinutes"`
	UpdatedAt       *time.Time         `json:"updatedAt,omitempty"`
}

// DefaultAlertConfig is the configuration of a tenant that never stored one: enabled, no
// destinations, every alert type on, cooldown 60 minutes.
func DefaultAlertConfig() AlertConfig {
	types := make(map[AlertKind]bool, len(AlertKinds))
	for _, k := range AlertKinds {
		types[k] = true
	}
	return AlertConfig{Enabled: true, Destinations: []AlertDestination{}, AlertTypes: types, CooldownMinutes: DefaultCooldown}
}

// Cooldown is the configured cooldown as a duration.
func (c AlertConfig) Cooldown() time.Duration { return time.Duration(c.CooldownMinutes) * time.Minute }

// Destination returns the destination with id.
func (c AlertConfig) Destination(id string) (AlertDestination, bool) {
	for _, d := range c.Destinations {
		if d.ID == id {
			return d, true
		}
	}
	return AlertDestination{}, false
}

// AlertDestinationInput is one destination of a PUT body.
type AlertDestinationInput struct {
	ID      *string `json:"id" max:"100"`
	Type    *string `json:"type" max:"200"`
	Value   *string `json:"value" max:"2048"`
	Name    *string `json:"name" max:"200"`
	Enabled *bool   `json:"enabled"`
	Secret  *string `json:"secret" max:"200"`
}

// AlertConfigInput is the `config` object of PUT /api/admin/alerts/config: the full configuration.
type AlertConfigInput struct {
	Enabled         *bool                    `json:"enabled"`
	Destinations    *[]AlertDestinationInput `json:"destinations"`
	AlertTypes      *map[string]*bool        `json:"alertTypes" max:"200"`
	CooldownMinutes *float64                 `json:"cooldownMinutes"`
}

// ValidEmail reports whether v is a plain e-mail address (no display name).
func ValidEmail(v string) bool {
	a, err := mail.ParseAddress(v)
	return err == nil && a.Address == v && a.Name == "" && strings.Contains(v[strings.LastIndexByte(v, '@')+1:], ".")
}

// CheckHTTPURL returns what is wrong with an outbound http(s) URL, or "".
func CheckHTTPURL(v string) string {
	if len(v) > maxOutboundURLLen {
		return fmt.Sprintf("must be at most %d characters", maxOutboundURLLen)
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return "must be an absolute http or https URL"
	}
	if u.User != nil {
		return "must not carry credentials"
	}
	return ""
}

// ResolveConfig validates a PUT body against the current configuration and returns the new one:
// destination ids are kept or assigned, secrets of WEBHOOK destinations kept or generated, and a
// destination disabled by the service keeps its reason until it is enabled again.
func (in AlertConfigInput) ResolveConfig(cur AlertConfig, now time.Time) (AlertConfig, error) {
	if err := checkInputAt("config", in); err != nil {
		return AlertConfig{}, err
	}
	fe := FieldErrors{}
	if in.Enabled == nil {
		fe.Add("config.enabled", "is required (true or false)")
	}
	if in.CooldownMinutes == nil {
		fe.Add("config.cooldownMinutes", "is required")
	} else if c := *in.CooldownMinutes; c != float64(int(c)) || c < MinCooldownMinutes || c > MaxCooldownMinutes {
		fe.Add("config.cooldownMinutes", "must be an integer between %d and %d", MinCooldownMinutes, MaxCooldownMinutes)
	}
	types := map[AlertKind]bool{}
	if in.AlertTypes == nil {
		fe.Add("config.alertTypes", "is required (an object of booleans keyed by alert type)")
	} else {
		for k, v := range *in.AlertTypes {
			if !slices.Contains(AlertKinds, AlertKind(k)) {
				fe.Add("config.alertTypes."+k, "unknown alert type (allowed: %s)", kindList())
				continue
			}
			if v == nil {
				fe.Add("config.alertTypes."+k, "must be a boolean")
				continue
			}
			types[AlertKind(k)] = *v
		}
		for _, k := range AlertKinds {
			if _, ok := (*in.AlertTypes)[string(k)]; !ok {
				fe.Add("config.alertTypes."+string(k), "is required (true or false)")
			}
		}
	}
	var dests []AlertDestination
	if in.Destinations == nil {
		fe.Add("config.destinations", "is required (an array, possibly empty)")
	} else if len(*in.Destinations) > MaxDestinations {
		fe.Add("config.destinations", "must have at most %d items", MaxDestinations)
	} else {
		seen := map[string]bool{}
		for i, d := range *in.Destinations {
			f := fmt.Sprintf("config.destinations[%d]", i)
			out := AlertDestination{Enabled: true}
			if d.ID != nil && strings.TrimSpace(*d.ID) != "" {
				out.ID = strings.TrimSpace(*d.ID)
				if len(out.ID) > 100 {
					fe.Add(f+".id", "must be at most 100 characters")
				}
			} else {
				out.ID = NewID("dst")
			}
			if seen[out.ID] {
				fe.Add(f+".id", "duplicate destination id %q", out.ID)
			}
			seen[out.ID] = true
			if d.Type == nil || *d.Type == "" {
				fe.Add(f+".type", "is required (EMAIL, WEBHOOK or CHAT)")
			} else if !slices.Contains(DestinationTypes, DestinationType(*d.Type)) {
				fe.Add(f+".type", "must be one of EMAIL, WEBHOOK, CHAT")
			} else {
				out.Type = DestinationType(*d.Type)
			}
			if d.Value == nil || strings.TrimSpace(*d.Value) == "" {
				fe.Add(f+".value", "is required")
			} else {
				out.Value = strings.TrimSpace(*d.Value)
				switch out.Type {
				case DestEmail:
					if !ValidEmail(out.Value) {
						fe.Add(f+".value", "must be an e-mail address for an EMAIL destination")
					}
				case DestWebhook, DestChat:
					if msg := CheckHTTPURL(out.Value); msg != "" {
						fe.Add(f+".value", "%s for a %s destination", msg, out.Type)
					}
				}
			}
			if d.Name != nil {
				out.Name = strings.TrimSpace(*d.Name)
				if len(out.Name) > MaxNameLen {
					fe.Add(f+".name", "must be at most %d characters", MaxNameLen)
				}
			}
			if d.Enabled != nil {
				out.Enabled = *d.Enabled
			}
			prev, existed := cur.Destination(out.ID)
			if out.Type == DestWebhook {
				switch {
				case d.Secret != nil && *d.Secret != "":
					if _, err := DecodeWebhookSecret(*d.Secret); err != nil {
						fe.Add(f+".secret", "must be whsec_ followed by base64 of 24 to 64 bytes")
					}
					out.Secret = *d.Secret
				case existed && prev.Secret != "":
					out.Secret = prev.Secret
				default:
					out.Secret = NewWebhookSecret()
				}
			}
			if existed && !out.Enabled && prev.DisabledReason != "" {
				out.DisabledReason, out.DisabledAt = prev.DisabledReason, prev.DisabledAt
			}
			dests = append(dests, out)
		}
	}
	if err := fe.Err(); err != nil {
		return AlertConfig{}, err
	}
	if dests == nil {
		dests = []AlertDestination{}
	}
	return AlertConfig{Enabled: *in.Enabled, Destinations: dests, AlertTypes: types,
		CooldownMinutes: int(*in.CooldownMinutes), UpdatedAt: &now}, nil
}

func kindList() string {
	s := make([]string, len(AlertKinds))
	for i, k := range AlertKinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Delivery states of one alert destination or one webhook delivery.
const (
	DeliveryPending   = "PENDING"
	DeliverySucceeded = "SUCCEEDED"
	DeliveryFailed    = "FAILED"
)

// DestinationResult is the delivery of one alert to one destination.
type DestinationResult struct {
	ID          string          `json:"id"`
	Type        DestinationType `json:"type"`
	Value       string          `json:"value"`
	Name        string          `json:"name,omitempty"`
	Delivered   bool            `json:"delivered"`
	DeliveredAt *time.Time      `json:"deliveredAt,omitempty"`
	// Status is PENDING while attempts remain, SUCCEEDED or FAILED.
	Status     string `json:"status"`
	Attempts   int    `json:"attempts"`
	LastError  string `json:"lastError,omitempty"`
	DeliveryID string `json:"deliveryId,omitempty"`
}

// Alert is one alert history item.
type Alert struct {
	ID              string              `json:"id"`
	Type            AlertKind           `json:"type"`
	Severity        Severity            `json:"severity"`
	Message         string              `json:"message"`
	ProductMasterID string              `json:"productMasterId,omitempty"`
	LocationID      string              `json:"locationId,omitempty"`
	ChannelID       string              `json:"channelId,omitempty"`
	TriggeredAt     time.Time           `json:"triggeredAt"`
	Delivered       bool                `json:"delivered"`
	DeliveredAt     *time.Time          `json:"deliveredAt,omitempty"`
	Destinations    []DestinationResult `json:"destinations"`
	// Source is "evaluation" or "manual"; Value is the money (or units) at stake used for severity.
	Source string   `json:"source"`
	Value  *float64 `json:"value,omitempty"`
	// Suppressed is set on an alert kept in history but sent nowhere because its evaluation fired
	// more than maxDeliveredPerEvaluation alerts (the most severe ones were sent).
	Suppressed bool `json:"suppressed,omitempty"`
}

// Refresh recomputes Delivered and DeliveredAt from the destinations: an alert is delivered when
// it had at least one destination and every destination received it.
func (a *Alert) Refresh() {
	a.Delivered = len(a.Destinations) > 0
	a.DeliveredAt = nil
	for _, d := range a.Destinations {
		if !d.Delivered {
			a.Delivered = false
			a.DeliveredAt = nil
			return
		}
		if a.DeliveredAt == nil || d.DeliveredAt.After(*a.DeliveredAt) {
			a.DeliveredAt = d.DeliveredAt
		}
	}
}

// AlertFilter selects alert history items.
type AlertFilter struct {
	From, To  *time.Time
	Type      AlertKind
	Severity  Severity
	Delivered *bool
	Page      int
	Limit     int
}

// Alert history page limits.
const (
	DefaultAlertPage = 50
	MaxAlertPage     = 100
)

// Pagination is the spec's page envelope of alert history.
type Pagination struct {
	Page       int `json:"page"`
	PageSize   int `json:"pageSize"`
	Total      int `json:"total"`
	TotalPages int `json:"totalPages"`
}

// NewPagination computes the envelope of total items.
func NewPagination(page, size, total int) Pagination {
	return Pagination{Page: page, PageSize: size, Total: total, TotalPages: (total + size - 1) / size}
}

// AlertPage is one page of alert history.
type AlertPage struct {
	Alerts     []Alert    `json:"alerts"`
	Pagination Pagination `json:"pagination"`
}

// Match reports whether a passes the filter.
func (f AlertFilter) Match(a *Alert) bool {
	if f.From != nil && a.TriggeredAt.Before(*f.From) {
		return false
	}
	if f.To != nil && a.TriggeredAt.After(*f.To) {
		return false
	}
	if f.Type != "" && a.Type != f.Type {
		return false
	}
	if f.Severity != "" && a.Severity != f.Severity {
		return false
	}
	if f.Delivered != nil && a.Delivered != *f.Delivered {
		return false
	}
	return true
}

// TriggerInput is the body of POST /api/admin/alerts/trigger.
type TriggerInput struct {
	Type            *string `json:"type" max:"200"`
	Severity        *string `json:"severity" max:"200"`
	Message         *string `json:"message" max:"2000"`
	ProductMasterID *string `json:"productMasterId" max:"200"`
	LocationID      *string `json:"locationId" max:"200"`
	ChannelID       *string `json:"channelId" max:"200"`
	BypassCooldown  *bool   `json:"bypassCooldown"`
}

// Validate checks the body's own fields (references are checked against the tenant).
func (in TriggerInput) Validate() error {
	if err := CheckInput(in); err != nil {
		return err
	}
	fe := FieldErrors{}
	if in.Type == nil || *in.Type == "" {
		fe.Add("type", "is required (%s)", kindList())
	} else if !slices.Contains(AlertKinds, AlertKind(*in.Type)) {
		fe.Add("type", "must be one of %s", kindList())
	}
	if in.Severity == nil || *in.Severity == "" {
		fe.Add("severity", "is required (CRITICAL, HIGH, MEDIUM or LOW)")
	} else if !slices.Contains(Severities, Severity(*in.Severity)) {
		fe.Add("severity", "must be one of CRITICAL, HIGH, MEDIUM, LOW")
	}
	if in.Message == nil || strings.TrimSpace(*in.Message) == "" {
		fe.Add("message", "is required")
	} else if len(*in.Message) > MaxAlertMessageLen {
		fe.Add("message", "must be at most %d characters", MaxAlertMessageLen)
	}
	for field, v := range map[string]*string{"productMasterId": in.ProductMasterID, "locationId": in.LocationID, "channelId": in.ChannelID} {
		if v != nil && len(*v) > 200 {
			fe.Add(field, "must be at most 200 characters")
		}
	}
	return fe.Err()
}

// AlertKey identifies what an alert is about for cooldown and hysteresis: (kind, product,
// location, channel). Kind may also be a webhook-only condition such as
// demand_signal.stockout_risk.
type AlertKey struct {
	Kind      string
	Product   string
	Location  string
	Channel   string
	Qualifier string // e.g. the week of a spike: one spike per week
}

// String renders the key as the gate's map key (fields separated by 0x1f).
func (k AlertKey) String() string {
	return k.Kind + "\x1f" + k.Product + "\x1f" + k.Location + "\x1f" + k.Channel + "\x1f" + k.Qualifier
}

// ParseAlertKey is the inverse of AlertKey.String.
func ParseAlertKey(s string) AlertKey {
	p := strings.SplitN(s, "\x1f", 5)
	for len(p) < 5 {
		p = append(p, "")
	}
	return AlertKey{Kind: p[0], Product: p[1], Location: p[2], Channel: p[3], Qualifier: p[4]}
}

// EvalReport summarizes one alert evaluation of a tenant.
type EvalReport struct {
	OrganizationID string        `json:"organizationId"`
	SKULocations   int           `json:"skuLocations"`
	Series         int           `json:"series"`
	Conditions     int           `json:"conditions"` // conditions holding now (firing or in their band)
	Fired          int           `json:"fired"`      // alerts created by this evaluation
	Events         int           `json:"events"`     // demand_signal.* webhook events emitted
	Took           time.Duration `json:"-"`
	TookMs         float64       `json:"tookMs"`
	Skipped        string        `json:"skipped,omitempty"`
}

// AlertService is the alerts API of a tenant.
type AlertService interface {
	GetAlertConfig(ctx context.Context, p Principal) (AlertConfig, error)
	PutAlertConfig(ctx context.Context, p Principal, in AlertConfigInput) (AlertConfig, error)
	ListAlerts(ctx context.Context, p Principal, f AlertFilter) (AlertPage, error)
	// TriggerAlert fires a manual alert, subject to the cooldown unless bypass is set
	// (RATE_LIMITED with RetryAfter when suppressed).
	TriggerAlert(ctx context.Context, p Principal, in TriggerInput) (Alert, error)
	// EvaluateAlerts runs an evaluation of the tenant now and waits for it.
	EvaluateAlerts(ctx context.Context, p Principal) (EvalReport, error)
}
