package http

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/stripe"
)

func (s *Server) listEndpoints(r *Request) error {
	eps, err := s.svc.Webhooks.ListEndpoints(r.Context, r.Principal)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"endpoints": eps})
}

func (s *Server) createEndpoint(r *Request) error {
	var in supplyplan.WebhookEndpointInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	c, err := s.svc.Webhooks.CreateEndpoint(r.Context, r.Principal, in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusCreated, map[string]any{"endpoint": c.Endpoint, "secret": c.Secret})
}

func (s *Server) getEndpoint(r *Request) error {
	e, err := s.svc.Webhooks.GetEndpoint(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"endpoint": e})
}

func (s *Server) updateEndpoint(r *Request) error {
	var in supplyplan.WebhookEndpointInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	e, err := s.svc.Webhooks.UpdateEndpoint(r.Context, r.Principal, r.Param("id"), in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"endpoint": e})
}

func (s *Server) deleteEndpoint(r *Request) error {
	if err := s.svc.Webhooks.DeleteEndpoint(r.Context, r.Principal, r.Param("id")); err != nil {
		return err
	}
	return r.NoContent()
}

func (s *Server) rotateEndpointSecret(r *Request) error {
	c, err := s.svc.Webhooks.RotateEndpointSecret(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"endpoint": c.Endpoint, "secret": c.Secret})
}

func (s *Server) listDeliveries(r *Request) error {
	q := r.Query()
	f := supplyplan.DeliveryFilter{
		Status: q.Enum("status", []string{supplyplan.DeliveryPending, supplyplan.DeliverySucceeded, supplyplan.DeliveryFailed}),
		Page:   q.Int("page", 1, 1, 1<<30),
		Limit:  q.Int("limit", supplyplan.DefaultAlertPage, 1, supplyplan.MaxAlertPage),
	}
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Webhooks.ListDeliveries(r.Context, r.Principal, r.Param("id"), f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, p)
}

func (s *Server) retryDelivery(r *Request) error {
	d, err := s.svc.Webhooks.RetryDelivery(r.Context, r.Principal, r.Param("id"), r.Param("deliveryId"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusAccepted, map[string]any{"success": true, "delivery": d})
}

func (s *Server) webhookEventTypes(r *Request) error {
	return r.JSON(fasthttp.StatusOK, map[string]any{"eventTypes": supplyplan.WebhookEventTypes()})
}

// paymentWebhook is POST /webhooks/payment-provider: signature over the raw body first, then the
// event; 200 only once its effect is durable.
func (s *Server) paymentWebhook(r *Request) error {
	if s.cfg.PaymentWebhookSecret == "" {
		s.log.Error("payment-provider webhook received but PAYMENT_PROVIDER_WEBHOOK_SECRET is not set")
		return supplyplan.Errorf(supplyplan.EUNAVAILABLE, "The payment-provider webhook is not configured")
	}
	body, err := r.Body()
	if err != nil {
		return err
	}
	hdr := string(r.Ctx.Request.Header.Peek("payment-provider-signature"))
	if err := supplyplan.VerifyPaymentSignature(hdr, body, s.cfg.PaymentWebhookSecret, s.now(), supplyplan.PaymentSignatureTolerance); err != nil {
		msg := "invalid signature"
		switch {
		case errors.Is(err, supplyplan.ErrSignatureMissing):
			msg = "missing signature"
		case errors.Is(err, supplyplan.ErrSignatureStale):
			msg = "timestamp outside the 300 s tolerance"
		case errors.Is(err, supplyplan.ErrSignatureFormat):
			msg = "malformed signature header"
		}
		return &supplyplan.Error{Code: supplyplan.EVALIDATION, Message: "Invalid payment-provider signature",
			Details: map[string][]string{"payment-provider-signature": {msg}}}
	}
	ev, err := stripe.ParseEvent(body) // the event keeps no reference to body
	if err != nil {
		return err
	}
	res, err := s.svc.Billing.HandlePaymentEvent(r.Context, ev)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"received": true, "result": res})
}

func (s *Server) notImplementedWebhook(r *Request) error {
	return supplyplan.Errorf(supplyplan.ENOTIMPLEMENTED, "Not implemented: this webhook route is not live")
}

func (s *Server) getBilling(r *Request) error {
	v, err := s.svc.Billing.GetBilling(r.Context, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, v)
}
