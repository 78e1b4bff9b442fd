package http

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[string]int{
	supplyplan.EVALIDATION:     fasthttp.StatusBadRequest,
	supplyplan.EUNAUTHORIZED:   fasthttp.StatusUnauthorized,
	supplyplan.EFORBIDDEN:      fasthttp.StatusForbidden,
	supplyplan.ETENANTREQUIRED: fasthttp.StatusForbidden,
	supplyplan.EFEATURE:        fasthttp.StatusForbidden,
	supplyplan.ENOTFOUND:       fasthttp.StatusNotFound,
	supplyplan.ECONFLICT:       fasthttp.StatusConflict,
	supplyplan.ETOOLARGE:       fasthttp.StatusRequestEntityTooLarge,
	supplyplan.ERATELIMITED:    fasthttp.StatusTooManyRequests,
	supplyplan.ENOTIMPLEMENTED: fasthttp.StatusNotImplemented,
	supplyplan.EUNAVAILABLE:    fasthttp.StatusServiceUnavailable,
	supplyplan.EINTERNAL:       fasthttp.StatusInternalServerError,
	supplyplan.EIDEMINFLIGHT:   fasthttp.StatusConflict,
	supplyplan.EIDEMREUSED:     fasthttp.StatusUnprocessableEntity,
	supplyplan.EIDEMLOST:       fasthttp.StatusGone,
	supplyplan.EVERSIONEXISTS:  fasthttp.StatusConflict,
	supplyplan.EBREAKINGCHANGE: fasthttp.StatusConflict,
	supplyplan.EPRECONDITION:   fasthttp.StatusPreconditionFailed,
	supplyplan.EINSTANCEEXISTS: fasthttp.StatusConflict,
	supplyplan.ECOUNTCHANGED:   fasthttp.StatusConflict,
}

// StatusOf returns the HTTP status of an error code.
func StatusOf(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return fasthttp.StatusInternalServerError
}

type errorBody struct {
	Error       string              `json:"error"`
	Code        string              `json:"code"`
	Details     map[string][]string `json:"details,omitempty"`
	Feature     string              `json:"feature,omitempty"`
	Entitlement string              `json:"entitlement,omitempty"`
	// Reason says why a 401 was given: KEY_MISSING, KEY_MALFORMED or KEY_UNKNOWN (unknown or revoked).
	Reason string `json:"reason,omitempty"`
}

// writeError is the one error renderer: {"error", "code", "details"?}. Internal errors never show
// their text.
func writeError(ctx *fasthttp.RequestCtx, err error) {
	var e *supplyplan.Error
	if !errors.As(err, &e) {
		if e = supplyplan.GateError(err); e == nil {
			e = supplyplan.Errorf(supplyplan.EINTERNAL, "Internal error")
		}
	}
	body := errorBody{Error: e.Message, Code: e.Code, Details: e.Details, Feature: e.Feature, Entitlement: e.Entitlement}
	if e.Code == supplyplan.EINTERNAL {
		body.Error, body.Details = "Internal error", nil
	}
	var ae *authError
	if errors.As(err, &ae) {
		body.Reason = ae.reason
	}
	if e.RetryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	writeErrorBody(ctx, StatusOf(e.Code), body)
}

func writeErrorStatus(ctx *fasthttp.RequestCtx, status int, code, msg string, details map[string][]string) {
	writeErrorBody(ctx, status, errorBody{Error: msg, Code: code, Details: details})
}

func writeErrorBody(ctx *fasthttp.RequestCtx, status int, body errorBody) {
	b, _ := json.Marshal(body)
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}
