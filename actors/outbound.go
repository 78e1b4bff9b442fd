package actors

import (
	"time"

	"github.com/supplyplan/supplyplan"
)

// OutboundConfig configures outbound deliveries: webhook endpoints, alert destinations, the
// federation and operations URLs (Webhooks).
type OutboundConfig struct {
	// Sender performs deliveries (HTTP and SMTP); nil records every attempt as failed.
	Sender supplyplan.Sender
	// Retry policies of webhook (endpoints, fixed URLs) and alert deliveries.
	WebhookRetry, AlertRetry supplyplan.RetryPolicy
	// Workers bounds the deliveries in flight (default 16).
	Workers int
	// AttemptTimeout bounds one attempt (default 10 s).
	AttemptTimeout time.Duration
	// FederationSecret (whsec_...) signs federation events to merchant webhook URLs.
	FederationSecret string
	// OpsAlertURL is a chat incoming hook receiving operations alerts (payment failures).
	OpsAlertURL string
	// SweepInterval re-reads the outboxes and prunes old outbound state (default 1 min).
	SweepInterval time.Duration
}

func (c *OutboundConfig) defaults() {
	if c.WebhookRetry.MaxAttempts == 0 {
		c.WebhookRetry = supplyplan.DefaultWebhookRetry
	}
	if c.AlertRetry.MaxAttempts == 0 {
		c.AlertRetry = supplyplan.DefaultAlertRetry
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = 10 * time.Second
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = time.Minute
	}
}

func (c *OutboundConfig) policies() supplyplan.Policies {
	return supplyplan.Policies{Webhook: c.WebhookRetry, Alert: c.AlertRetry}
}
