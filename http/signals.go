package http

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// signalRow is one signal of POST /api/demand/signals; organizationId defaults to the caller's.
type signalRow struct {
	SignalID       *string  `json:"signalId"`
	OrganizationID *string  `json:"organizationId"`
	SKU            *string  `json:"skuId"`
	Location       *string  `json:"locationId"`
	Channel        *string  `json:"channel"`
	Quantity       *float64 `json:"quantity"`
	OccurredAt     *string  `json:"occurredAt"`
}

type signalOutcomeView struct {
	SignalID string `json:"signalId"`
	supplyplan.SignalOutcome
}

// postSignals ingests a batch of demand signals for users without Kafka: they take the same path
// as the stream (tenant actor, then the demand store, deduplicated by signalId) and the answer
// tells each signal's outcome once it is durable.
func (s *Server) postSignals(r *Request) error {
	body, err := r.Body()
	if err != nil {
		return err
	}
	var in struct {
		Signals *[]json.RawMessage `json:"signals"`
	}
	// The rows stay raw (a bad row is a rejected signal, not a 400) but are checked as signal rows.
	if err := decodeJSONAs(body, 0, &in, reflect.TypeFor[struct {
		Signals []signalRow `json:"signals"`
	}]()); err != nil {
		return err
	}
	if in.Signals == nil || len(*in.Signals) == 0 {
		return supplyplan.Invalid("signals", "is required: a non-empty array of signals")
	}
	if len(*in.Signals) > s.cfg.ImportMaxRows {
		return &supplyplan.Error{Code: supplyplan.ETOOLARGE, Message: "Payload too large",
			Details: map[string][]string{"signals": {"at most " + itoa(s.cfg.ImportMaxRows) + " signals per request"}}}
	}
	raw := *in.Signals
	outcomes := make([]signalOutcomeView, len(raw))
	var signals []supplyplan.DemandSignal // the rows that are signals, in order
	var slots []int                       // the index in raw of each
	for i, rm := range raw {
		var row signalRow
		if err := json.Unmarshal(rm, &row); err != nil || strings.TrimSpace(string(rm))[0] != '{' {
			outcomes[i].SignalOutcome = supplyplan.Rejected(supplyplan.RejectInvalidSignal, "not a JSON object with the signal fields")
			continue
		}
		sg := supplyplan.DemandSignal{OrganizationID: r.Principal.OrgID}
		sg.SignalID, sg.SKU, sg.Location, sg.Channel = deref(row.SignalID), deref(row.SKU), deref(row.Location), deref(row.Channel)
		outcomes[i].SignalID = sg.SignalID
		if row.OrganizationID != nil && *row.OrganizationID != "" && *row.OrganizationID != r.Principal.OrgID {
			outcomes[i].SignalOutcome = supplyplan.Rejected(supplyplan.RejectUnknownTenant, "organizationId is not the caller's organization")
			continue
		}
		if row.Quantity != nil {
			sg.Quantity = *row.Quantity
		} else {
			outcomes[i].SignalOutcome = supplyplan.Rejected(supplyplan.RejectInvalidSignal, "quantity is required")
			continue
		}
		if row.OccurredAt != nil {
			if t, ok := supplyplan.ParseTime(*row.OccurredAt); ok {
				sg.OccurredAt = t // one that does not parse stays zero: NormalizeSignal refuses it
			}
		}
		signals = append(signals, sg)
		slots = append(slots, i)
	}
	if len(signals) > 0 {
		// The signals are validated once, by the stream's Publish (supplyplan.NormalizeSignal: an
		// invalid one comes back REJECTED with reason INVALID_SIGNAL, naming its fields), as the
		// Kafka consumer's decoder validates what arrives over Kafka; see signal_path.go in the
		// root package. Above, only what the REST row form adds is checked.
		res, err := s.svc.Signals.Publish(r.Context, signals)
		if err != nil {
			return err
		}
		for j, i := range slots {
			outcomes[i].SignalOutcome = res[j]
		}
	}
	counts := map[string]int{"applied": 0, "duplicates": 0, "rejected": 0}
	for _, o := range outcomes {
		switch o.Status {
		case supplyplan.SignalApplied:
			counts["applied"]++
		case supplyplan.SignalDuplicate:
			counts["duplicates"]++
		default:
			counts["rejected"]++
		}
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"applied": counts["applied"], "duplicates": counts["duplicates"],
		"rejected": counts["rejected"], "outcomes": outcomes})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// signalAuth accepts either an import key with import:write (x-api-key) or a bearer key with
// forecast.write. Either way the batch may be as large as an import (the limit is raised only
// after the key is checked).
func (s *Server) signalAuth(h handlerFunc) handlerFunc {
	viaKey := s.importKey(supplyplan.ScopeImportWrite)(h)
	viaBearer := func(r *Request) error {
		if err := s.tenantAccess(r, supplyplan.PermForecastWrite, nil, s.cfg.ImportMaxBytes); err != nil {
			return err
		}
		return s.run(r, h)
	}
	return func(r *Request) error {
		if len(r.Ctx.Request.Header.Peek("x-api-key")) > 0 {
			return viaKey(r)
		}
		return viaBearer(r)
	}
}
