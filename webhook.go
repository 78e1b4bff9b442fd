package supplyplan

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Outbound webhook event types the service produces. Producers elsewhere (transfers,
// recommendations) add theirs with RegisterWebhookEventType.
const (
	EventImportCompleted      = "import.completed"
	EventImportPartial        = "import.partial"
	EventImportFailed         = "import.failed"
	EventDemandSpike          = "demand_signal.spike_detected"
	EventDemandStockoutRisk   = "demand_signal.stockout_risk"
	EventAlertTriggered       = "alert.triggered"
	EventSubscriptionUpdated  = "subscription.updated"
	EventRecommendationPrefix = "recommendation."
	EventTransferPrefix       = "transfer."
	EventMerchantUpdated      = "merchant.updated"
	// LoopEventPrefix starts the loop runtime's events: loop.<domain>.<transition or lifecycle>.
	LoopEventPrefix = "loop."
)

var (
	eventTypesMu sync.RWMutex
	eventTypes   = []string{EventImportCompleted, EventImportPartial, EventImportFailed, EventDemandSpike,
		EventDemandStockoutRisk, EventAlertTriggered, EventSubscriptionUpdated,
		"recommendation.created", "recommendation.approved", "recommendation.rejected",
		"recommendation.executed", "recommendation.expired",
		"transfer.created", "transfer.updated", "transfer.in_transit", "transfer.received", "transfer.cancelled",
		EventAllocationSucceeded, EventAllocationFailed}
)

// RegisterWebhookEventType adds an event type endpoints may subscribe to (idempotent).
func RegisterWebhookEventType(t string) {
	eventTypesMu.Lock()
	defer eventTypesMu.Unlock()
	if !slices.Contains(eventTypes, t) {
		eventTypes = append(eventTypes, t)
	}
}

// WebhookEventTypes lists the event types endpoints may subscribe to.
func WebhookEventTypes() []string {
	eventTypesMu.RLock()
	defer eventTypesMu.RUnlock()
	return slices.Clone(eventTypes)
}

// DeliverableEvent reports whether events of type t go to webhook endpoints.
func DeliverableEvent(t string) bool {
	if strings.HasPrefix(t, LoopEventPrefix) {
		return true // every loop's events, also those of an organization's own loops
	}
	eventTypesMu.RLock()
	defer eventTypesMu.RUnlock()
	return slices.Contains(eventTypes, t)
}

// WebhookEndpoint is a tenant's outbound webhook subscription.
type WebhookEndpoint struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Description string   `json:"description,omitempty"`
	EventTypes  []string `json:"eventTypes"` // empty: every event type
	Enabled     bool     `json:"enabled"`
	// Secret signs deliveries; PreviousSecret (after a rotation) signs them too until
	// PreviousSecretExpiresAt.
	Secret                  string     `json:"secret,omitempty"`
	PreviousSecret          string     `json:"previousSecret,omitempty"`
	PreviousSecretExpiresAt *time.Time `json:"previousSecretExpiresAt,omitempty"`
	DisabledReason          string     `json:"disabledReason,omitempty"`
	DisabledAt              *time.Time `json:"disabledAt,omitempty"`
	CreatedAt               time.Time  `json:"createdAt"`
	UpdatedAt               time.Time  `json:"updatedAt"`
}

// SecretRotationOverlap is how long the previous secret keeps signing after a rotation.
const SecretRotationOverlap = 24 * time.Hour

// Subscribed reports whether the endpoint wants events of type t. A filter entry may be a type,
// "*", or a prefix ending in ".*" ("import.*").
func (e *WebhookEndpoint) Subscribed(t string) bool {
	if len(e.EventTypes) == 0 {
		return true
	}
	for _, f := range e.EventTypes {
		if f == "*" || f == t || (strings.HasSuffix(f, ".*") && strings.HasPrefix(t, strings.TrimSuffix(f, "*"))) {
			return true
		}
	}
	return false
}

// SigningSecrets returns the secrets that sign a delivery at now (current first).
func (e *WebhookEndpoint) SigningSecrets(now time.Time) []string {
	s := []string{e.Secret}
	if e.PreviousSecret != "" && e.PreviousSecretExpiresAt != nil && now.Before(*e.PreviousSecretExpiresAt) {
		s = append(s, e.PreviousSecret)
	}
	return s
}

// View is the endpoint as listed: without its secrets.
func (e WebhookEndpoint) View() WebhookEndpoint {
	e.Secret, e.PreviousSecret = "", ""
	return e
}

// Limits of webhook endpoints.
const (
	MaxWebhookEndpoints = 20
	MaxEventTypeFilters = 50
)

// WebhookEndpointInput is the body of endpoint create and update (update: absent fields kept).
type WebhookEndpointInput struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	EventTypes  *[]string `json:"eventTypes"`
	Enabled     *bool     `json:"enabled"`
}

// Apply validates in and returns cur changed by it (create: cur is the zero value).
func (in WebhookEndpointInput) Apply(cur WebhookEndpoint, create bool, now time.Time) (WebhookEndpoint, error) {
	fe := FieldErrors{}
	e := cur
	if in.URL == nil {
		if create {
			fe.Add("url", "is required")
		}
	} else if msg := CheckHTTPURL(strings.TrimSpace(*in.URL)); msg != "" {
		fe.Add("url", "%s", msg)
	} else {
		e.URL = strings.TrimSpace(*in.URL)
	}
	if in.Description != nil {
		if len(*in.Description) > MaxDescriptionLen {
			fe.Add("description", "must be at most %d characters", MaxDescriptionLen)
		}
		e.Description = strings.TrimSpace(*in.Description)
	}
	if in.EventTypes != nil {
		if len(*in.EventTypes) > MaxEventTypeFilters {
			fe.Add("eventTypes", "must have at most %d items", MaxEventTypeFilters)
		}
		known := WebhookEventTypes()
		types := []string{}
		for _, t := range *in.EventTypes {
			ok := t == "*" || slices.Contains(known, t)
			if strings.HasSuffix(t, ".*") {
				for _, k := range known {
					ok = ok || strings.HasPrefix(k, strings.TrimSuffix(t, "*"))
				}
			}
			if !ok {
				fe.Add("eventTypes", "unknown event type %q (allowed: %s, \"*\" or a prefix such as \"import.*\")", t, strings.Join(known, ", "))
				break
			}
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		e.EventTypes = types
	}
	if e.EventTypes == nil {
		e.EventTypes = []string{}
	}
	if in.Enabled != nil {
		e.Enabled = *in.Enabled
		if e.Enabled {
			e.DisabledReason, e.DisabledAt = "", nil
		}
	} else if create {
		e.Enabled = true
	}
	if err := fe.Err(); err != nil {
		return WebhookEndpoint{}, err
	}
	if create {
		e.ID, e.Secret, e.CreatedAt = NewID("whe"), NewWebhookSecret(), now
	}
	e.UpdatedAt = now
	return e, nil
}

// WebhookPayload is the body of every outbound webhook: {"type", "timestamp", "data"}.
type WebhookPayload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// EncodePayload renders the payload of an event.
func EncodePayload(e DomainEvent) (json.RawMessage, error) {
	return json.Marshal(WebhookPayload{Type: e.Type, Timestamp: e.Timestamp, Data: e.Data})
}

// Delivery targets.
const (
	TargetEndpoint = "endpoint" // a tenant webhook endpoint (signed with its secrets)
	TargetAlert    = "alert"    // an alert destination (EMAIL, WEBHOOK signed, CHAT)
	TargetURL      = "url"      // a fixed URL (federation events), signed when a platform secret is set
	TargetURLChat  = "url-chat" // a fixed chat incoming hook (operations alerts)
	ownerPlatform  = "platform"
)

// PlatformOwner is the owner id of platform-level outbound state (federation events, operations
// alerts).
const PlatformOwner = ownerPlatform

// DeliveryAttempt is one try of a delivery.
type DeliveryAttempt struct {
	AttemptedAt time.Time `json:"attemptedAt"`
	StatusCode  int       `json:"statusCode,omitempty"`
	LatencyMs   float64   `json:"latencyMs"`
	Success     bool      `json:"success"`
	Error       string    `json:"error,omitempty"`
	Manual      bool      `json:"manual,omitempty"`
}

// Delivery is one message to one target, retried until it succeeds or gives up.
type Delivery struct {
	ID            string            `json:"id"`
	Target        string            `json:"target"`
	EndpointID    string            `json:"endpointId,omitempty"`
	AlertID       string            `json:"alertId,omitempty"`
	DestinationID string            `json:"destinationId,omitempty"`
	URL           string            `json:"url,omitempty"` // fixed-URL targets
	EventID       string            `json:"eventId"`
	EventType     string            `json:"eventType"`
	Payload       json.RawMessage   `json:"payload"`
	Status        string            `json:"status"`
	Attempts      []DeliveryAttempt `json:"attempts"`
	MaxAttempts   int               `json:"maxAttempts"`
	NextAttemptAt *time.Time        `json:"nextAttemptAt,omitempty"`
	CreatedAt     time.Time         `json:"createdAt"`
	CompletedAt   *time.Time        `json:"completedAt,omitempty"`
}

// RetryPolicy spaces the attempts of an operation that fails: retry n (n >= 1) waits
// min(Base*Factor^(n-1), Cap), scaled by a random factor in [1-Jitter, 1+Jitter], and there are
// at most MaxAttempts attempts (0: no limit). It is the service's one backoff: a delivery journals
// its next attempt at Delay(n); what retries in place (import writes, demand-signal sink calls and
// dead-letter writes) runs through internal/backoff.Retry with a policy.
type RetryPolicy struct {
	Base        time.Duration
	Factor      float64
	Cap         time.Duration
	Jitter      float64
	MaxAttempts int
}

// DefaultWebhookRetry retries over about three days: 30 s, 2 m, 8 m, 32 m, 2 h 8 m, 8 h 32 m,
// then 12 h five times (12 attempts, about 71 hours).
var DefaultWebhookRetry = RetryPolicy{Base: 30 * time.Second, Factor: 4, Cap: 12 * time.Hour, Jitter: 0.2, MaxAttempts: 12}

// DefaultAlertRetry retries alert deliveries for about three quarters of an hour: 30 s, 2 m,
// 8 m, 32 m (5 attempts); an alert older than that is stale.
var DefaultAlertRetry = RetryPolicy{Base: 30 * time.Second, Factor: 4, Cap: 12 * time.Hour, Jitter: 0.2, MaxAttempts: 5}

// Delay returns the wait before retry n (1 = the first retry).
func (p RetryPolicy) Delay(n int) time.Duration {
	d := float64(p.Base)
	for i := 1; i < n && d < float64(p.Cap); i++ {
		d *= p.Factor
	}
	d = min(d, float64(p.Cap))
	if p.Jitter > 0 {
		d *= 1 - p.Jitter + 2*p.Jitter*rand.Float64()
	}
	return time.Duration(d)
}

// Window is the longest the attempts of a delivery can take under the policy: the sum of the
// largest delays (jitter included) before each of its retries. A delivery older than that gives
// up after its next failed attempt, so one that waited behind earlier deliveries to its target
// still gets an attempt but does not start a full schedule of its own. Zero Base: no bound.
func (p RetryPolicy) Window(attempts int) time.Duration {
	if p.Base <= 0 {
		return time.Duration(math.MaxInt64)
	}
	limit := float64(p.Cap)
	if p.Cap <= 0 {
		limit = math.Inf(1)
	}
	var total float64
	d := float64(p.Base)
	for n := 1; n < attempts; n++ {
		total += min(d, limit) * (1 + max(p.Jitter, 0))
		if d < limit {
			d *= p.Factor
		}
	}
	if total >= float64(math.MaxInt64) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(total)
}

// DeliveryFilter selects deliveries of an endpoint.
type DeliveryFilter struct {
	Status string
	Page   int
	Limit  int
}

// DeliveryPage is one page of an endpoint's delivery log.
type DeliveryPage struct {
	Deliveries []Delivery `json:"deliveries"`
	Pagination Pagination `json:"pagination"`
}

// CreatedEndpoint is a new endpoint with its secret (shown once).
type CreatedEndpoint struct {
	Endpoint WebhookEndpoint
	Secret   string
}

// WebhookService manages a tenant's outbound webhook endpoints.
type WebhookService interface {
	ListEndpoints(ctx context.Context, p Principal) ([]WebhookEndpoint, error)
	CreateEndpoint(ctx context.Context, p Principal, in WebhookEndpointInput) (CreatedEndpoint, error)
	GetEndpoint(ctx context.Context, p Principal, id string) (WebhookEndpoint, error)
	UpdateEndpoint(ctx context.Context, p Principal, id string, in WebhookEndpointInput) (WebhookEndpoint, error)
	DeleteEndpoint(ctx context.Context, p Principal, id string) error
	RotateEndpointSecret(ctx context.Context, p Principal, id string) (CreatedEndpoint, error)
	ListDeliveries(ctx context.Context, p Principal, endpointID string, f DeliveryFilter) (DeliveryPage, error)
	RetryDelivery(ctx context.Context, p Principal, endpointID, deliveryID string) (Delivery, error)
}

// OutboundMessage is one thing to send: an HTTP POST (webhook or chat) or an e-mail.
type OutboundMessage struct {
	// Channel is WEBHOOK, CHAT or EMAIL.
	Channel DestinationType
	URL     string
	Headers map[string]string
	Body    []byte
	// E-mail fields.
	To, Subject, Text string
}

// SendResult is what a sender observed.
type SendResult struct {
	StatusCode int
	Latency    time.Duration
	Err        error
}

// Sender performs outbound deliveries (the outbound adapter).
type Sender interface {
	Send(ctx context.Context, m OutboundMessage) SendResult
	// CheckURL refuses a destination that resolves to a private or loopback address (unless the
	// operator allowed them): VALIDATION_ERROR naming field.
	CheckURL(ctx context.Context, field, rawURL string) error
}
