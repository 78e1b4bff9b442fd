// Package stripe reads the payment provider's webhook events, which are Stripe-shaped (an
// envelope with id, type, created and data.object, the object a subscription or an invoice), into
// the domain's normalized supplyplan.PaymentEvent. It is the only code that knows that shape: the
// billing rules (root billing.go) see the normalized event only.
package stripe

import (
	"encoding/json"
	"time"

	"github.com/supplyplan/supplyplan"
)

func init() {
	// Unmatched payments written by earlier versions stored the provider's event body.
	supplyplan.RegisterPaymentParser(ParseEvent)
}

// event is the envelope of a provider event.
type event struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Created int64  `json:"created"` // unix seconds
	Data    struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// object holds the fields of subscription and invoice objects the service reads.
type object struct {
	ID                  string            `json:"id"`
	Object              string            `json:"object"`
	Customer            json.RawMessage   `json:"customer"`
	Status              string            `json:"status"`
	Metadata            map[string]string `json:"metadata"`
	CurrentPeriodEnd    int64             `json:"current_period_end"`
	Subscription        json.RawMessage   `json:"subscription"`
	SubscriptionDetails struct {
		Metadata map[string]string `json:"metadata"`
	} `json:"subscription_details"`
	Items struct {
		Data []struct {
			Price struct {
				ID        string `json:"id"`
				LookupKey string `json:"lookup_key"`
				Product   string `json:"product"`
			} `json:"price"`
			Plan struct {
				ID      string `json:"id"`
				Product string `json:"product"`
			} `json:"plan"`
		} `json:"data"`
	} `json:"items"`
	Plan *struct {
		ID string `json:"id"`
	} `json:"plan"`
	AmountPaid int64  `json:"amount_paid"`
	AmountDue  int64  `json:"amount_due"`
	Currency   string `json:"currency"`
}

// ParseEvent decodes and checks an event body. Errors are VALIDATION_ERROR naming the field.
func ParseEvent(body []byte) (supplyplan.PaymentEvent, error) {
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil {
		return supplyplan.PaymentEvent{}, supplyplan.Invalid("body", "must be a JSON event object")
	}
	fe := supplyplan.FieldErrors{}
	if ev.ID == "" {
		fe.Add("id", "is required")
	}
	if ev.Type == "" {
		fe.Add("type", "is required")
	}
	if ev.Created <= 0 {
		fe.Add("created", "is required (unix seconds)")
	}
	if len(ev.Data.Object) == 0 || ev.Data.Object[0] != '{' {
		fe.Add("data.object", "is required (an object)")
	}
	if err := fe.Err(); err != nil {
		return supplyplan.PaymentEvent{}, err
	}
	var obj object
	if err := json.Unmarshal(ev.Data.Object, &obj); err != nil {
		return supplyplan.PaymentEvent{}, supplyplan.Invalid("data.object", "is not a subscription or invoice object")
	}
	out := supplyplan.PaymentEvent{ID: ev.ID, Type: ev.Type, Created: time.Unix(ev.Created, 0).UTC(),
		ObjectID: obj.ID, CustomerID: idOf(obj.Customer), Status: obj.Status, PlanRefs: obj.planRefs(),
		AmountPaid: obj.AmountPaid, AmountDue: obj.AmountDue, Currency: obj.Currency}
	for _, md := range []map[string]string{obj.Metadata, obj.SubscriptionDetails.Metadata} {
		if id := md["organizationId"]; id != "" {
			out.OrganizationIDs = append(out.OrganizationIDs, id)
		}
	}
	if obj.CurrentPeriodEnd > 0 {
		pe := time.Unix(obj.CurrentPeriodEnd, 0).UTC()
		out.CurrentPeriodEnd = &pe
	}
	return out, nil
}

// idOf reads a field that is either an id string or an expanded object with an id.
func idOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.ID
}

// planRefs lists what may name the plan: metadata.plan, then each item's price lookup key, price
// id, product and plan id, then the legacy plan id.
func (o object) planRefs() []string {
	var refs []string
	if p := o.Metadata["plan"]; p != "" {
		refs = append(refs, p)
	}
	for _, it := range o.Items.Data {
		refs = append(refs, it.Price.LookupKey, it.Price.ID, it.Price.Product, it.Plan.ID, it.Plan.Product)
	}
	if o.Plan != nil {
		refs = append(refs, o.Plan.ID)
	}
	out := refs[:0]
	for _, r := range refs {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}
