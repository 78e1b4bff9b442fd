package http

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

// CSV (docs/api.md#csv): every import endpoint also takes text/csv, and forecasts,
// recommendations, alert history, demand history and an import job's row errors download as CSV
// with Accept: text/csv, streamed, with the filters of the JSON form.

// isCSV reports whether a Content-Type is text/csv.
func isCSV(contentType []byte) bool {
	mt, _, _ := bytes.Cut(contentType, []byte(";"))
	return bytes.EqualFold(bytes.TrimSpace(mt), []byte(ctCSV))
}

// wantsCSV reports whether the request asks for CSV: its Accept names text/csv with a higher
// quality than application/json (or the same, listed first). Anything else gets JSON.
func wantsCSV(r *Request) bool {
	a := r.Ctx.Request.Header.Peek("Accept")
	if !bytes.Contains(bytes.ToLower(a), []byte(ctCSV)) {
		return false // the common case: no parsing
	}
	csvQ, jsonQ, csvAt, jsonAt := -1.0, -1.0, -1, -1
	for i, part := range strings.Split(string(a), ",") {
		mt, params, _ := strings.Cut(part, ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case ctCSV:
			if q > csvQ {
				csvQ, csvAt = q, i
			}
		case ctJSON:
			if q > jsonQ {
				jsonQ, jsonAt = q, i
			}
		}
	}
	return csvQ > 0 && (csvQ > jsonQ || csvQ == jsonQ && csvAt < jsonAt)
}

// csvNested are the imports whose rows hold an array of lines: in CSV, one line per record, the
// line's columns prefixed "lines.", and the records of one row consecutive, sharing its key.
var csvNested = map[supplyplan.ImportKind]string{
	supplyplan.ImportOrders:         "externalOrderId",
	supplyplan.ImportPurchaseOrders: "externalPoNumber",
}

// csvColumn is one column of an import's CSV form.
type csvColumn struct {
	name string       // the JSON field
	kind reflect.Kind // String, Float64, Int, Int64, Bool
	line bool         // a field of the row's lines
}

// importCSVColumns lists the columns an import's CSV may have, by header name.
func importCSVColumns(k supplyplan.ImportKind) map[string]csvColumn {
	out := map[string]csvColumn{}
	var walk func(t reflect.Type, prefix string, line bool)
	walk = func(t reflect.Type, prefix string, line bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type, prefix, line)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Slice {
				if f.Name == "Lines" && csvNested[k] != "" {
					walk(ft.Elem(), "lines.", true)
				}
				continue // other nested arrays (inventory lots) have no CSV form
			}
			out[prefix+name] = csvColumn{name: name, kind: ft.Kind(), line: line}
		}
	}
	walk(reflect.TypeOf(importRowTypes[k]), "", false)
	return out
}

// importCSVHeader is the documented column order of an import's CSV form.
func importCSVHeader(k supplyplan.ImportKind) string {
	var names []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type, prefix)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Type.Kind() == reflect.Slice {
				if f.Name == "Lines" && csvNested[k] != "" {
					walk(f.Type.Elem(), "lines.")
				}
				continue
			}
			names = append(names, prefix+name)
		}
	}
	walk(reflect.TypeOf(importRowTypes[k]), "")
	return strings.Join(names, ",")
}

// csvImportBody converts the CSV body of an import into its JSON body: the header names the
// columns (the JSON field names; "lines.<field>" for the lines of orders and purchase orders), an
// empty cell leaves the field out, numbers and booleans become JSON numbers and booleans (a cell
// that is neither stays a string: the row is then rejected with INVALID_TYPE, as in JSON).
func csvImportBody(kind supplyplan.ImportKind, b []byte, maxRows int) ([]byte, error) {
	cols := importCSVColumns(kind)
	rd := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(b, []byte("\ufeff"))))
	rd.ReuseRecord = true
	header, err := rd.Read()
	if err == io.EOF {
		return nil, supplyplan.Invalid("body", "is empty: a CSV import starts with a header row naming the columns")
	}
	if err != nil {
		return nil, csvError(err)
	}
	header = append([]string(nil), header...)
	idx := make([]csvColumn, len(header))
	seen := map[string]bool{}
	key := csvNested[kind]
	keyAt := -1
	for i, h := range header {
		h = strings.TrimSpace(h)
		c, ok := cols[h]
		if !ok {
			return nil, supplyplan.Invalid(h, "is not a column of a %s import (columns: %s)", kind, importCSVHeader(kind))
		}
		if seen[h] {
			return nil, supplyplan.Invalid(h, "appears twice in the header row")
		}
		seen[h] = true
		idx[i] = c
		if h == key {
			keyAt = i
		}
	}
	type row struct {
		fields map[string]any
		lines  []map[string]any
	}
	var rows []*row
	var cur *row
	curKey := ""
	for {
		rec, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := rd.FieldPos(0)
		fields, lineFields := map[string]any{}, map[string]any{}
		for i, cell := range rec {
			if cell == "" {
				continue
			}
			c := idx[i]
			v := csvValue(c.kind, cell)
			if c.line {
				lineFields[c.name] = v
			} else {
				fields[c.name] = v
			}
		}
		if key != "" && cur != nil && keyAt >= 0 && rec[keyAt] != "" && rec[keyAt] == curKey {
			// Another line of the current row: its row columns repeat the first line's or are empty.
			for name, v := range fields {
				if prev, ok := cur.fields[name]; !ok || prev != v {
					return nil, supplyplan.Invalid(name, "line %d: differs from the first line of %s %q (repeat the value or leave it empty)", line, key, curKey)
				}
			}
		} else {
			if maxRows > 0 && len(rows) >= maxRows {
				return nil, &supplyplan.Error{Code: supplyplan.ETOOLARGE, Message: "Payload too large",
					Details: map[string][]string{kind.ArrayKey(): {fmt.Sprintf("at most %d rows per request", maxRows)}}}
			}
			cur = &row{fields: fields}
			rows = append(rows, cur)
			if keyAt >= 0 {
				curKey = rec[keyAt]
			}
		}
		if key != "" && len(lineFields) > 0 {
			cur.lines = append(cur.lines, lineFields)
		}
	}
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = r.fields
		if key != "" {
			if r.lines == nil {
				r.lines = []map[string]any{}
			}
			out[i]["lines"] = r.lines
		}
	}
	return json.Marshal(map[string]any{kind.ArrayKey(): out})
}

func csvValue(k reflect.Kind, cell string) any {
	switch k {
	case reflect.Float64, reflect.Float32:
		if f, err := strconv.ParseFloat(strings.TrimSpace(cell), 64); err == nil && jsonNumber(f) {
			return f
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if n, err := strconv.ParseInt(strings.TrimSpace(cell), 10, 64); err == nil {
			return n
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(cell), 64); err == nil && jsonNumber(f) {
			return f // a fraction: the row is rejected as in JSON
		}
	case reflect.Bool:
		if b, err := strconv.ParseBool(strings.TrimSpace(cell)); err == nil {
			return b
		}
	}
	return cell
}

func jsonNumber(f float64) bool { return f == f && f-f == 0 } // not NaN, not ±Inf

// csvError is the 400 of a CSV that does not parse, naming its line.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return supplyplan.Invalid("body", "CSV line %d: %v", pe.Line, pe.Err)
	}
	return supplyplan.Invalid("body", "CSV: %v", err)
}

// csvPage is one page of rows of a download; more says whether another page follows.
type csvPage func(ctx context.Context, page int) (rows [][]string, more bool, err error)

// streamCSV answers 200 text/csv: the header, then the pages of next. The first page is read
// before answering (so that its errors are the usual JSON errors); the others while the response
// streams, each under a deadline of the request timeout's length. A page that fails after the
// answer has started ends the body early and is logged.
func (r *Request) streamCSV(filename string, header []string, next csvPage) error {
	first, more, err := next(r.Context, 0)
	if err != nil {
		return err
	}
	timeout, log := 30*time.Second, r.logger()
	if r.server != nil {
		timeout = r.server.cfg.RequestTimeout
	}
	path := string(r.Ctx.Path())
	r.Ctx.SetStatusCode(fasthttp.StatusOK)
	r.Ctx.SetContentType("text/csv; charset=utf-8")
	r.Ctx.Response.Header.Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	r.retain() // the writer runs after the handler returns
	r.Ctx.SetBodyStreamWriter(func(bw *bufio.Writer) {
		w := csv.NewWriter(bw)
		_ = w.Write(header)
		for _, row := range first {
			_ = w.Write(row)
		}
		for page := 1; more; page++ {
			w.Flush()
			if err := w.Error(); err != nil {
				return // the client went away
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			var rows [][]string
			rows, more, err = next(ctx, page)
			cancel()
			if err != nil {
				log.Error("csv download stopped", "path", path, "page", page, "err", err)
				break
			}
			for _, row := range rows {
				_ = w.Write(row)
			}
		}
		w.Flush()
	})
	return nil
}

func (r *Request) logger() interface {
	Error(msg string, args ...any)
} {
	if r.server != nil {
		return r.server.log
	}
	return discardLogger{}
}

type discardLogger struct{}

func (discardLogger) Error(string, ...any) {}

// CSV cells.
func csvFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
func csvQty(f float64) string   { return csvFloat(supplyplan.RoundQuantity(f)) }
func csvTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
func csvTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return csvTime(*t)
}
func csvFloatPtr(f *float64) string {
	if f == nil {
		return ""
	}
	return csvFloat(*f)
}

// The columns of the downloads.
var (
	forecastCSVHeader       = []string{"productMasterId", "locationId", "channel", "model", "weekStarting", "baseline", "quantity", "lower", "upper"}
	recommendationCSVHeader = []string{"id", "productMasterId", "sourceLocationId", "destLocationId", "quantity", "priority", "status", "reason",
		"estimatedROI", "createdAt", "updatedAt", "expiresAt", "approvedAt", "approvedBy", "rejectedAt", "rejectedBy", "executedAt", "executedBy",
		"transferId", "comment"}
	alertCSVHeader = []string{"id", "type", "severity", "message", "productMasterId", "locationId", "channelId", "triggeredAt", "delivered",
		"deliveredAt", "source", "value", "suppressed"}
	rowErrorCSVHeader = []string{"row", "field", "code", "message"}
	demandCSVHeader   = []string{"skuId", "locationId", "channel", "weekStarting", "actualDemand", "forecastedDemand", "stockout"}
)

// forecastCSV downloads GET /api/forecast: one record per series and week, every series the
// filters select (limit and offset are ignored: pages are walked).
func (s *Server) forecastCSV(r *Request, fq supplyplan.ForecastQuery) error {
	p := r.Principal
	fq.Limit, fq.Offset = supplyplan.MaxForecastPage, 0
	return r.streamCSV("forecast.csv", forecastCSVHeader, func(ctx context.Context, page int) ([][]string, bool, error) {
		q := fq
		q.Offset = page * q.Limit
		res, err := s.svc.Forecast.Forecast(ctx, p, q)
		if err != nil {
			return nil, false, err
		}
		var rows [][]string
		for _, f := range res.Forecasts {
			for _, w := range f.Periods {
				rows = append(rows, []string{f.ProductMasterID, f.LocationID, f.Channel, f.Model,
					time.Time(w.WeekStarting).UTC().Format(time.DateOnly), csvQty(float64(w.Baseline)), csvQty(float64(w.Quantity)),
					csvQty(float64(w.Lower)), csvQty(float64(w.Upper))})
			}
		}
		return rows, q.Offset+len(res.Forecasts) < res.Total && len(res.Forecasts) > 0, nil
	})
}

// recommendationsCSV downloads a recommendation list: every recommendation the filters select.
func (s *Server) recommendationsCSV(r *Request, f supplyplan.RecommendationFilter) error {
	p := r.Principal
	f.Limit, f.Offset = supplyplan.MaxPageLimit, 0
	return r.streamCSV("recommendations.csv", recommendationCSVHeader, func(ctx context.Context, page int) ([][]string, bool, error) {
		q := f
		q.Offset = page * q.Limit
		res, err := s.svc.Transfers.ListRecommendations(ctx, p, q)
		if err != nil {
			return nil, false, err
		}
		rows := make([][]string, 0, len(res.Items))
		for _, x := range res.Items {
			roi := csvFloatPtr(x.EstimatedROI)
			rows = append(rows, []string{x.ID, x.ProductMasterID, x.SourceLocationID, x.DestLocationID, csvQty(x.Quantity),
				string(x.Priority), string(x.Status), x.Reason, roi, csvTime(x.CreatedAt), csvTime(x.UpdatedAt), csvTime(x.ExpiresAt),
				csvTimePtr(x.ApprovedAt), x.ApprovedBy, csvTimePtr(x.RejectedAt), x.RejectedBy, csvTimePtr(x.ExecutedAt), x.ExecutedBy,
				x.TransferID, x.Comment})
		}
		return rows, q.Offset+len(res.Items) < res.Total && len(res.Items) > 0, nil
	})
}

// alertsCSV downloads alert history: every alert the filters select.
func (s *Server) alertsCSV(r *Request, f supplyplan.AlertFilter) error {
	p := r.Principal
	f.Limit = supplyplan.MaxAlertPage
	return r.streamCSV("alerts.csv", alertCSVHeader, func(ctx context.Context, page int) ([][]string, bool, error) {
		q := f
		q.Page = page + 1
		res, err := s.svc.Alerts.ListAlerts(ctx, p, q)
		if err != nil {
			return nil, false, err
		}
		rows := make([][]string, 0, len(res.Alerts))
		for _, a := range res.Alerts {
			rows = append(rows, []string{a.ID, string(a.Type), string(a.Severity), a.Message, a.ProductMasterID, a.LocationID, a.ChannelID,
				csvTime(a.TriggeredAt), strconv.FormatBool(a.Delivered), csvTimePtr(a.DeliveredAt), a.Source, csvFloatPtr(a.Value),
				strconv.FormatBool(a.Suppressed)})
		}
		return rows, q.Page < res.Pagination.TotalPages && len(res.Alerts) > 0, nil
	})
}

// rowErrorsCSV downloads an import job's row errors.
func rowErrorsCSV(r *Request, j supplyplan.ImportJob) error {
	return r.streamCSV("import-"+j.JobID+"-errors.csv", rowErrorCSVHeader, func(context.Context, int) ([][]string, bool, error) {
		rows := make([][]string, len(j.Errors))
		for i, e := range j.Errors {
			rows[i] = []string{strconv.Itoa(e.Row), e.Field, e.Code, e.Message}
		}
		return rows, false, nil
	})
}

// demandCSV downloads a series' demand history in the columns of a demand-history import.
func demandCSV(r *Request, key supplyplan.DemandKey, weeks []supplyplan.WeekValue) error {
	return r.streamCSV("demand-history.csv", demandCSVHeader, func(context.Context, int) ([][]string, bool, error) {
		rows := make([][]string, len(weeks))
		for i, w := range weeks {
			rows[i] = []string{key.SKU, key.Location, key.Channel, w.Week.UTC().Format(time.DateOnly), csvQty(w.Actual), csvQty(w.Forecasted),
				strconv.FormatBool(w.Stockout)}
		}
		return rows, false, nil
	})
}

// The OpenAPI options of the CSV forms.
var (
	forecastCSVDoc        = csvDownload(strings.Join(forecastCSVHeader, ","))
	recommendationsCSVDoc = csvDownload(strings.Join(recommendationCSVHeader, ","))
	alertHistoryCSVDoc    = csvDownload(strings.Join(alertCSVHeader, ","))
	importErrorsCSVDoc    = csvDownload(strings.Join(rowErrorCSVHeader, ","))
	demandHistoryCSVDoc   = csvDownload(strings.Join(demandCSVHeader, ","))
)

// csvImportDoc documents the text/csv body of an import.
func csvImportDoc(k supplyplan.ImportKind) opt {
	return func(d *apiDoc, op schema) {
		desc := "A header row with the field names (" + "`" + importCSVHeader(k) + "`" + "), then one row per record; an empty cell leaves the field out."
		if key := csvNested[k]; key != "" {
			desc += " One CSV record per line: the line's fields are the `lines.` columns, and the records of one " + key +
				" are consecutive, the first carrying its fields (later ones repeat them or leave them empty)."
		}
		if k == supplyplan.ImportInventory {
			desc += " Lots have no CSV form (send JSON)."
		}
		op["requestBody"].(schema)["content"].(schema)[ctCSV] = schema{"schema": schema{"type": "string", "description": desc},
			"example": importCSVHeader(k) + "\n"}
	}
}
