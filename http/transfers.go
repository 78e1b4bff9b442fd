package http

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

func (s *Server) generateRecommendations(r *Request) error {
	var in supplyplan.GenerateInput
	if err := r.DecodeOptional(&in); err != nil {
		return err
	}
	res, err := s.svc.Transfers.GenerateRecommendations(r.Context, r.Principal, in)
	if err != nil {
		return err
	}
	if b, ok := generateResponse(res); ok {
		r.Ctx.SetStatusCode(fasthttp.StatusOK)
		r.Ctx.SetContentType("application/json")
		r.Raw(b)
		return nil
	}
	return r.JSON(fasthttp.StatusOK, generateResponseMap(res))
}

func generateResponseMap(res supplyplan.GenerateResult) map[string]any {
	return map[string]any{"success": true, "created": len(res.Created), "recommendations": res.Created,
		"skippedPending": res.SkippedPending, "skippedRecentlyRejected": res.SkippedRejected, "expired": res.Expired,
		"productsEvaluated": res.Products}
}

// generateResponse writes generateResponseMap's JSON (keys in encoding/json's order) with the
// recommendations' hand-written encoding, into one buffer sized for it: a generation over 10,000
// products x 50 locations answers 50,000 recommendations with their explanations (~80 MB), which
// encoding/json built by doubling a buffer that fasthttp then copied. False when a recommendation
// has no hand-written form (a float JSON cannot write: the map's encoding reports it).
func generateResponse(res supplyplan.GenerateResult) ([]byte, bool) {
	size := 256
	for i := range res.Created {
		size += 400 + len(res.Created[i].Reason)
		if res.Created[i].Explanation != nil {
			size += 900 + len(res.Created[i].Explanation.Formula)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"created":`...)
	b = strconv.AppendInt(b, int64(len(res.Created)), 10)
	b = append(b, `,"expired":`...)
	b = strconv.AppendInt(b, int64(res.Expired), 10)
	b = append(b, `,"productsEvaluated":`...)
	b = strconv.AppendInt(b, int64(res.Products), 10)
	b = append(b, `,"recommendations":`...)
	if res.Created == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range res.Created {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = supplyplan.AppendJSON(b, &res.Created[i]); !ok {
				return nil, false
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"skippedPending":`...)
	b = strconv.AppendInt(b, int64(res.SkippedPending), 10)
	b = append(b, `,"skippedRecentlyRejected":`...)
	b = strconv.AppendInt(b, int64(res.SkippedRejected), 10)
	b = append(b, `,"success":true}`...)
	return b, true
}

func recFilter(q *Query) supplyplan.RecommendationFilter {
	f := supplyplan.RecommendationFilter{
		Status:           supplyplan.RecommendationStatus(q.Enum("status", enumStrings(supplyplan.RecommendationStatuses))),
		Priority:         supplyplan.Priority(q.Enum("priority", enumStrings(supplyplan.Priorities))),
		ProductMasterID:  q.String("productMasterId"),
		SourceLocationID: q.String("sourceLocationId"),
		DestLocationID:   q.String("destLocationId"),
		ValidOnly:        q.Bool("validOnly", false),
	}
	f.Limit, f.Offset = pageParams(q)
	return f
}

func (s *Server) listRecommendations(r *Request) error {
	q := r.Query()
	f := recFilter(q)
	if err := q.Err(); err != nil {
		return err
	}
	return s.recommendationPage(r, f)
}

func (s *Server) pendingRecommendations(r *Request) error {
	q := r.Query()
	f := recFilter(q)
	if err := q.Err(); err != nil {
		return err
	}
	f.Status, f.ValidOnly = supplyplan.RecPending, true
	return s.recommendationPage(r, f)
}

func (s *Server) recommendationPage(r *Request, f supplyplan.RecommendationFilter) error {
	if wantsCSV(r) {
		return s.recommendationsCSV(r, f)
	}
	p, err := s.svc.Transfers.ListRecommendations(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"recommendations": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *Server) getRecommendation(r *Request) error {
	rec, err := s.svc.Transfers.GetRecommendation(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"recommendation": rec})
}

type commentBody struct {
	Comment *string `json:"comment"`
}

func (c commentBody) text() (string, error) {
	if c.Comment == nil {
		return "", nil
	}
	if len(*c.Comment) > supplyplan.MaxDescriptionLen {
		return "", supplyplan.Invalid("comment", "must be at most %d characters", supplyplan.MaxDescriptionLen)
	}
	return *c.Comment, nil
}

func (s *Server) decodeComment(r *Request) (string, error) {
	var in commentBody
	if err := r.DecodeOptional(&in); err != nil {
		return "", err
	}
	return in.text()
}

func (s *Server) approveRecommendation(r *Request) error {
	comment, err := s.decodeComment(r)
	if err != nil {
		return err
	}
	rec, err := s.svc.Transfers.ApproveRecommendation(r.Context, r.Principal, r.Param("id"), comment)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"success": true, "recommendation": map[string]any{
		"id": rec.ID, "status": rec.Status, "approvedAt": rec.ApprovedAt, "approvedBy": rec.ApprovedBy, "comment": rec.Comment}})
}

func (s *Server) rejectRecommendation(r *Request) error {
	comment, err := s.decodeComment(r)
	if err != nil {
		return err
	}
	rec, err := s.svc.Transfers.RejectRecommendation(r.Context, r.Principal, r.Param("id"), comment)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"success": true, "recommendation": map[string]any{
		"id": rec.ID, "status": rec.Status, "rejectedAt": rec.RejectedAt, "rejectedBy": rec.RejectedBy, "comment": rec.Comment}})
}

func (s *Server) executeRecommendation(r *Request) error {
	comment, err := s.decodeComment(r)
	if err != nil {
		return err
	}
	rec, t, err := s.svc.Transfers.ExecuteRecommendation(r.Context, r.Principal, r.Param("id"), comment)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"success": true,
		"recommendation": map[string]any{"id": rec.ID, "status": rec.Status, "executedAt": rec.ExecutedAt}, "transfer": t})
}

func (s *Server) listTransfers(r *Request) error {
	q := r.Query()
	f := supplyplan.TransferFilter{
		Status:           supplyplan.TransferStatus(q.Enum("status", enumStrings(supplyplan.TransferStatuses))),
		ProductMasterID:  q.String("productMasterId"),
		SourceLocationID: q.String("sourceLocationId"),
		DestLocationID:   q.String("destLocationId"),
	}
	f.Limit, f.Offset = pageParams(q)
	if err := q.Err(); err != nil {
		return err
	}
	p, err := s.svc.Transfers.ListTransfers(r.Context, r.Principal, f)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"transfers": p.Items, "total": p.Total, "limit": p.Limit, "offset": p.Offset})
}

func (s *Server) createTransfer(r *Request) error {
	var in supplyplan.TransferInput
	if err := r.Decode(&in); err != nil {
		return err
	}
	t, err := s.svc.Transfers.CreateTransfer(r.Context, r.Principal, in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusCreated, map[string]any{"transfer": t})
}

func (s *Server) getTransfer(r *Request) error {
	t, err := s.svc.Transfers.GetTransfer(r.Context, r.Principal, r.Param("id"))
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"transfer": t})
}

func (s *Server) updateTransfer(r *Request) error {
	var in supplyplan.TransferUpdate
	if err := r.Decode(&in); err != nil {
		return err
	}
	t, err := s.svc.Transfers.UpdateTransfer(r.Context, r.Principal, r.Param("id"), in)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"transfer": t})
}

func (s *Server) transferBins(r *Request) error {
	q := r.Query()
	loc, sku := q.String("locationId"), q.String("skuId")
	if sku == "" {
		sku = q.String("productMasterId")
	}
	if loc == "" {
		return supplyplan.Invalid("locationId", "is required")
	}
	bins, err := s.svc.Transfers.Bins(r.Context, r.Principal, loc, sku)
	if err != nil {
		return err
	}
	return r.JSON(fasthttp.StatusOK, map[string]any{"locationId": loc, "bins": bins, "asOf": time.Now().UTC().Truncate(time.Millisecond)})
}
