package http

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/importjson"
)

// consolePage is the page size of every console list.
const consolePage = 25

func (s *ConsoleServer) consoleRoutes() {
	rt := s.router
	rt.handle("GET", "/static/:a", s.serveStatic)
	rt.handle("GET", "/static/:a/:b", s.serveStatic)
	rt.handle("GET", "/static/:a/:b/:c", s.serveStatic)
	rt.handle("GET", "/login", s.loginForm)
	rt.handle("POST", "/login", s.login)
	rt.handle("POST", "/logout", s.page(s.logout))

	rt.handle("GET", "/", s.page(s.home))
	rt.handle("GET", "/home/accuracy", s.page(s.homeAccuracy))
	rt.handle("GET", "/home/outbound", s.page(s.homeOutbound))
	rt.handle("GET", "/forecast", s.page(s.forecastPage))
	rt.handle("GET", "/forecast/data", s.page(s.forecastData))
	rt.handle("POST", "/forecast/scenarios", s.page(s.createScenario))
	rt.handle("POST", "/forecast/scenarios/:id/publish", s.page(s.publishScenario))

	rt.handle("GET", "/recommendations", s.page(s.recsPage))
	rt.handle("POST", "/recommendations/generate", s.page(s.recsGenerate))
	rt.handle("POST", "/recommendations/bulk", s.page(s.recsBulk))
	rt.handle("POST", "/recommendations/:id/:action", s.page(s.recAction))

	rt.handle("GET", "/events", s.page(s.eventsPage))
	rt.handle("GET", "/events/:id", s.page(s.eventPage))
	rt.handle("POST", "/events", s.page(s.saveEvent))
	rt.handle("POST", "/events/:id", s.page(s.saveEvent))
	rt.handle("POST", "/events/:id/delete", s.page(s.deleteEvent))

	rt.handle("GET", "/inventory", s.page(s.inventoryPage))

	rt.handle("GET", "/alerts", s.page(s.alertsPage))
	rt.handle("POST", "/alerts/config", s.page(s.saveAlertConfig))
	rt.handle("POST", "/alerts/trigger", s.page(s.triggerAlert))

	rt.handle("GET", "/imports", s.page(s.importsPage))
	rt.handle("GET", "/imports/:id", s.page(s.importJob))
	rt.handle("POST", "/imports", s.page(s.uploadImport))

	rt.handle("GET", "/webhooks", s.page(s.webhooksPage))
	rt.handle("GET", "/webhooks/:id", s.page(s.webhookPage))
	rt.handle("POST", "/webhooks", s.page(s.createWebhook))
	rt.handle("POST", "/webhooks/:id/deliveries/:deliveryId/retry", s.page(s.retryDelivery))

	rt.handle("GET", "/loops", s.page(s.loopsPage))
	rt.handle("GET", "/loops/view", s.page(s.loopPage))
	rt.handle("GET", "/loops/instances", s.page(s.loopInstancesPage))
	rt.handle("GET", "/loops/instances/:id", s.page(s.loopInstancePage))

	rt.handle("GET", "/platform", s.page(s.platformPage))
	rt.handle("POST", "/platform/orgs", s.page(s.platformCreateOrg))
	rt.handle("GET", "/platform/orgs/:id", s.page(s.platformOrg))
	rt.handle("POST", "/platform/orgs/:id/keys", s.page(s.platformCreateKey))
	rt.handle("POST", "/platform/orgs/:id/keys/:keyId/revoke", s.page(s.platformRevokeKey))
	rt.handle("POST", "/platform/orgs/:id/entitlements", s.page(s.platformEntitlements))
}

// requirePlatform is the platform endpoints' rule: only the platform key.
func (r *consoleRequest) requirePlatform() error {
	if !r.P.Platform {
		return &supplyplan.Error{Code: supplyplan.EFORBIDDEN, Message: "Forbidden",
			Details: map[string][]string{"session": {"requires the platform key"}}}
	}
	return nil
}

// offset reads the page offset of a list (?offset=, never negative).
func (r *consoleRequest) offset() int {
	n, err := strconv.Atoi(r.Query("offset"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// pager is the previous/next links of a list whose filter is in the URL.
type pager struct {
	Total, Offset, Limit int
	Prev, Next           string
	From, To             int
}

func newPager(r *consoleRequest, total, offset, limit int) pager {
	p := pager{Total: total, Offset: offset, Limit: limit, From: offset + 1, To: min(offset+limit, total)}
	if total == 0 {
		p.From = 0
	}
	link := func(off int) string {
		q := url.Values{}
		r.Ctx.QueryArgs().VisitAll(func(k, v []byte) {
			if string(k) != "offset" && string(k) != "flash" {
				q.Add(string(k), string(v))
			}
		})
		if off > 0 {
			q.Set("offset", strconv.Itoa(off))
		}
		return string(r.Ctx.Path()) + "?" + q.Encode()
	}
	if offset > 0 {
		p.Prev = link(max(0, offset-limit))
	}
	if offset+limit < total {
		p.Next = link(offset + limit)
	}
	return p
}

// ---- home ----

type homeData struct {
	LastImport       *supplyplan.ImportJob
	Pending          int
	AlertsWeek       int
	AlertsUndeliv    int
	AlertsKnown      bool
	Deliveries       int
	DeliveryFailed   int
	DeliveryKnown    bool
	DeliveryFailRate string
}

func (s *ConsoleServer) home(r *consoleRequest) error {
	if r.P.Platform {
		return redirect(r, "/platform", "")
	}
	if err := r.require(supplyplan.PermTransfersRead, nil); err != nil {
		return err
	}
	var d homeData
	if jobs, err := s.svc.Imports.ListImportJobs(r.Context, r.P); err == nil && len(jobs) > 0 {
		d.LastImport = &jobs[0]
	}
	recs, err := s.svc.Transfers.ListRecommendations(r.Context, r.P, supplyplan.RecommendationFilter{Status: supplyplan.RecPending, ValidOnly: true, Limit: 1})
	if err != nil {
		return err
	}
	d.Pending = recs.Total
	return s.render(r, "home", "Home", "home", d)
}

// homeOutbound is the home page's alerts and delivery tiles, loaded after the page: they count
// the organization's alert history and webhook deliveries, which can be long.
func (s *ConsoleServer) homeOutbound(r *consoleRequest) error {
	if err := r.require(supplyplan.PermTransfersRead, nil); err != nil {
		return err
	}
	var d homeData
	if r.can(supplyplan.PermAlertsRead, nil) {
		from := time.Now().Add(-7 * 24 * time.Hour)
		if pg, err := s.svc.Alerts.ListAlerts(r.Context, r.P, supplyplan.AlertFilter{From: &from, Page: 1, Limit: 1}); err == nil {
			d.AlertsWeek, d.AlertsKnown = pg.Pagination.Total, true
		}
		no := false
		if pg, err := s.svc.Alerts.ListAlerts(r.Context, r.P, supplyplan.AlertFilter{From: &from, Delivered: &no, Page: 1, Limit: 1}); err == nil {
			d.AlertsUndeliv = pg.Pagination.Total
		}
	}
	if r.can(supplyplan.PermWebhooksRead, nil) && s.svc.Webhooks != nil {
		if eps, err := s.svc.Webhooks.ListEndpoints(r.Context, r.P); err == nil {
			d.DeliveryKnown = true
			for i, ep := range eps {
				if i == 50 {
					break
				}
				all, err1 := s.svc.Webhooks.ListDeliveries(r.Context, r.P, ep.ID, supplyplan.DeliveryFilter{Page: 1, Limit: 1})
				failed, err2 := s.svc.Webhooks.ListDeliveries(r.Context, r.P, ep.ID, supplyplan.DeliveryFilter{Status: supplyplan.DeliveryFailed, Page: 1, Limit: 1})
				if err1 == nil && err2 == nil {
					d.Deliveries += all.Pagination.Total
					d.DeliveryFailed += failed.Pagination.Total
				}
			}
			if d.Deliveries > 0 {
				d.DeliveryFailRate = strconv.FormatFloat(float64(d.DeliveryFailed)*100/float64(d.Deliveries), 'f', 1, 64) + " %"
			} else {
				d.DeliveryFailRate = "no deliveries"
			}
		}
	}
	return s.fragment(r, "home", "outbound", d)
}

// homeAccuracy is the home page's accuracy tile, loaded after the page (it reads the forecast
// history of every series).
func (s *ConsoleServer) homeAccuracy(r *consoleRequest) error {
	if !r.can(supplyplan.PermForecastRead, featureForecasting) {
		return s.fragment(r, "home", "accuracy", map[string]any{"Denied": true})
	}
	rep, err := s.svc.Forecast.Accuracy(r.Context, r.P, supplyplan.AccuracyQuery{WindowWeeks: 13})
	if err != nil {
		return s.fragment(r, "home", "accuracy", map[string]any{"Err": errorText(err)})
	}
	return s.fragment(r, "home", "accuracy", map[string]any{"Report": rep})
}

// ---- forecast explorer ----

type seriesQuery struct {
	SKU, Location, Channel, Scenario string
	Compare                          []string
}

func readSeriesQuery(r *consoleRequest) seriesQuery {
	q := seriesQuery{SKU: r.Query("sku"), Location: r.Query("location"), Channel: r.Query("channel"),
		Scenario: r.Query("scenario"), Compare: r.QueryAll("compare")}
	if len(q.Compare) > 4 {
		q.Compare = q.Compare[:4]
	}
	return q
}

func (s *ConsoleServer) forecastPage(r *consoleRequest) error {
	if err := r.require(supplyplan.PermForecastRead, featureForecasting); err != nil {
		return err
	}
	q := readSeriesQuery(r)
	scenarios, err := s.svc.Forecasting.ListScenarios(r.Context, r.P, supplyplan.ScenarioFilter{})
	if err != nil {
		return err
	}
	data := map[string]any{"Q": q, "Scenarios": scenarios, "ScenarioTypes": supplyplan.ScenarioTypes}
	off := r.offset()
	res, err := s.svc.Forecast.Forecast(r.Context, r.P, supplyplan.ForecastQuery{ProductMasterID: q.SKU, LocationID: q.Location,
		Channel: q.Channel, ScenarioID: q.Scenario, Limit: 10, Offset: off})
	if err != nil {
		data["SearchError"] = errorText(err)
	} else {
		data["Series"], data["Pager"] = res.Forecasts, newPager(r, res.Total, off, 10)
		if q.SKU != "" && q.Location != "" && len(res.Forecasts) == 1 {
			data["Selected"] = res.Forecasts[0]
			v := url.Values{"sku": {q.SKU}, "location": {q.Location}}
			if q.Channel != "" {
				v.Set("channel", q.Channel)
			}
			if q.Scenario != "" {
				v.Set("scenario", q.Scenario)
			}
			for _, c := range q.Compare {
				v.Add("compare", c)
			}
			data["DataURL"] = "/forecast/data?" + v.Encode()
		}
	}
	return s.render(r, "forecast", "Forecast explorer", "forecast", data)
}

// chartData is what console.js plots: x in unix seconds (week starts), one array per series
// (null where a series has no value), and the event markers.
type chartData struct {
	X        []int64                     `json:"x"`
	Series   []chartSeries               `json:"series"`
	Band     [2]int                      `json:"band"` // indexes of the lower and upper series
	Events   []chartEvent                `json:"events"`
	Model    string                      `json:"model"`
	Accuracy supplyplan.ForecastAccuracy `json:"accuracy"`
}

type chartSeries struct {
	Label  string     `json:"label"`
	Kind   string     `json:"kind"` // actual, baseline, forecast, lower, upper, compare
	Values []*float64 `json:"values"`
}

type chartEvent struct {
	X       int64   `json:"x"`
	ID      string  `json:"id"`
	Type    string  `json:"type"`
	LiftPct float64 `json:"liftPct"`
	Learned bool    `json:"learned"`
}

func (s *ConsoleServer) forecastData(r *consoleRequest) error {
	if err := r.require(supplyplan.PermForecastRead, featureForecasting); err != nil {
		return err
	}
	q := readSeriesQuery(r)
	if q.SKU == "" || q.Location == "" {
		return supplyplan.Invalid("sku", "sku and location are required")
	}
	key := supplyplan.DemandKey{SKU: q.SKU, Location: q.Location, Channel: q.Channel}
	if key.Channel == "" {
		key.Channel = supplyplan.ChannelAll
	}
	fc, err := s.svc.Forecast.Forecast(r.Context, r.P, supplyplan.ForecastQuery{ProductMasterID: q.SKU, LocationID: q.Location,
		Channel: key.Channel, ScenarioID: q.Scenario, Limit: 1})
	if err != nil {
		return err
	}
	if len(fc.Forecasts) == 0 {
		return supplyplan.NotFound("series")
	}
	f := fc.Forecasts[0]
	from := supplyplan.WeekStart(time.Now()).Add(-52 * 7 * 24 * time.Hour)
	hist, err := s.svc.Demand.DemandHistory(r.Context, r.P, key, from, time.Time{})
	if err != nil {
		return err
	}
	idx := map[int64]int{}
	var out chartData
	out.Model, out.Accuracy = f.Model, f.Accuracy
	addX := func(t time.Time) int {
		x := t.UTC().Unix()
		if i, ok := idx[x]; ok {
			return i
		}
		idx[x] = len(out.X)
		out.X = append(out.X, x)
		return idx[x]
	}
	for _, w := range hist {
		addX(w.Week)
	}
	for _, p := range f.Periods {
		addX(time.Time(p.WeekStarting))
	}
	slices.Sort(out.X)
	for i, x := range out.X {
		idx[x] = i
	}
	n := len(out.X)
	mk := func(label, kind string) *chartSeries {
		out.Series = append(out.Series, chartSeries{Label: label, Kind: kind, Values: make([]*float64, n)})
		return &out.Series[len(out.Series)-1]
	}
	val := func(v float64) *float64 { return &v }
	actual := mk("Actual", "actual")
	for _, w := range hist {
		actual.Values[idx[w.Week.UTC().Unix()]] = val(w.Actual)
	}
	// Take the pointers again after every append: mk grows the slice.
	mk("Baseline", "baseline")
	mk("Forecast", "forecast")
	mk("Lower", "lower")
	mk("Upper", "upper")
	for _, p := range f.Periods {
		i := idx[time.Time(p.WeekStarting).UTC().Unix()]
		out.Series[1].Values[i] = val(float64(p.Baseline))
		out.Series[2].Values[i] = val(float64(p.Quantity))
		out.Series[3].Values[i] = val(float64(p.Lower))
		out.Series[4].Values[i] = val(float64(p.Upper))
		for _, e := range p.Events {
			if e.Included {
				out.Events = append(out.Events, chartEvent{X: time.Time(p.WeekStarting).UTC().Unix(), ID: e.ID, Type: e.Type,
					LiftPct: e.LiftPct, Learned: e.Learned})
			}
		}
	}
	out.Band = [2]int{4, 5} // uPlot indexes: 0 is x
	for _, id := range q.Compare {
		sc, err := s.svc.Forecasting.GetScenario(r.Context, r.P, id)
		if err != nil {
			return err
		}
		cf, err := s.svc.Forecast.Forecast(r.Context, r.P, supplyplan.ForecastQuery{ProductMasterID: q.SKU, LocationID: q.Location,
			Channel: key.Channel, ScenarioID: id, Limit: 1})
		if err != nil {
			return err
		}
		cs := mk("Scenario: "+sc.Name, "compare")
		if len(cf.Forecasts) == 1 {
			for _, p := range cf.Forecasts[0].Periods {
				if i, ok := idx[time.Time(p.WeekStarting).UTC().Unix()]; ok {
					cs.Values[i] = val(float64(p.Quantity))
				}
			}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	r.Ctx.SetContentType("application/json")
	r.Ctx.SetBody(b)
	return nil
}

func (s *ConsoleServer) createScenario(r *consoleRequest) error {
	if err := r.require(supplyplan.PermForecastWrite, featureForecasting); err != nil {
		return err
	}
	name, typ := r.Form("name"), r.Form("type")
	in := supplyplan.ScenarioInput{Name: &name, Type: &typ}
	if v := r.Form("globalLiftPct"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return supplyplan.Invalid("assumptions.globalLiftPct", "must be a number")
		}
		in.Assumptions = &supplyplan.AssumptionsInput{GlobalLiftPct: &f}
	}
	if d := r.Form("description"); d != "" {
		in.Description = &d
	}
	sc, err := s.svc.Forecasting.CreateScenario(r.Context, r.P, in)
	if err != nil {
		return err
	}
	return redirect(r, "/forecast?"+r.Form("back"), "Scenario "+sc.Name+" created ("+string(sc.Status)+").")
}

func (s *ConsoleServer) publishScenario(r *consoleRequest) error {
	if err := r.require(supplyplan.PermForecastWrite, featureForecasting); err != nil {
		return err
	}
	sc, err := s.svc.Forecasting.PublishScenario(r.Context, r.P, r.Param("id"))
	if err != nil {
		return err
	}
	return redirect(r, "/forecast?"+r.Form("back"), "Scenario "+sc.Name+" published.")
}

// ---- recommendations ----

// recFilterView is the recommendations filter as it sits in the URL.
type recFilterView struct {
	Status, Priority, Product, Source, Dest string
}

func (f recFilterView) filter() supplyplan.RecommendationFilter {
	return supplyplan.RecommendationFilter{Status: supplyplan.RecommendationStatus(f.Status), Priority: supplyplan.Priority(f.Priority),
		ProductMasterID: f.Product, SourceLocationID: f.Source, DestLocationID: f.Dest}
}

// Describe is the filter in words (the bulk confirmation shows it).
func (f recFilterView) Describe() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+" = "+v)
		}
	}
	add("status", f.Status)
	add("priority", f.Priority)
	add("product", f.Product)
	add("source", f.Source)
	add("destination", f.Dest)
	if len(parts) == 0 {
		return "no filter: every recommendation"
	}
	return strings.Join(parts, ", ")
}

// Query is the filter as URL query parameters.
func (f recFilterView) Query() string {
	v := url.Values{}
	for k, x := range map[string]string{"status": f.Status, "priority": f.Priority, "product": f.Product, "source": f.Source, "dest": f.Dest} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v.Encode()
}

func readRecFilter(get func(string) string) (recFilterView, error) {
	f := recFilterView{Status: get("status"), Priority: get("priority"), Product: get("product"), Source: get("source"), Dest: get("dest")}
	fe := supplyplan.FieldErrors{}
	if f.Status != "" && !slices.Contains(supplyplan.RecommendationStatuses, supplyplan.RecommendationStatus(f.Status)) {
		fe.Add("status", "must be one of PENDING, APPROVED, EXECUTED, REJECTED, EXPIRED")
	}
	if f.Priority != "" && !slices.Contains(supplyplan.Priorities, supplyplan.Priority(f.Priority)) {
		fe.Add("priority", "must be one of URGENT, HIGH, MEDIUM, LOW")
	}
	return f, fe.Err()
}

func (s *ConsoleServer) recsPage(r *consoleRequest) error {
	if err := r.require(supplyplan.PermTransfersRead, nil); err != nil {
		return err
	}
	f, err := readRecFilter(r.Query)
	if err != nil {
		return err
	}
	off := r.offset()
	rf := f.filter()
	rf.Limit, rf.Offset = consolePage, off
	page, err := s.svc.Transfers.ListRecommendations(r.Context, r.P, rf)
	if err != nil {
		return err
	}
	return s.render(r, "recommendations", "Recommendations", "recommendations", map[string]any{
		"F": f, "Recs": page.Items, "Pager": newPager(r, page.Total, off, consolePage),
		"Statuses": supplyplan.RecommendationStatuses, "Priorities": supplyplan.Priorities})
}

func (s *ConsoleServer) recsGenerate(r *consoleRequest) error {
	if err := r.require(supplyplan.PermTransfersWrite, nil); err != nil {
		return err
	}
	res, err := s.svc.Transfers.GenerateRecommendations(r.Context, r.P, supplyplan.GenerateInput{})
	if err != nil {
		return err
	}
	return redirect(r, "/recommendations?status=PENDING", strconv.Itoa(len(res.Created))+" recommendations created.")
}

// recActions maps a console action to its permission, the states it applies to and the service call.
var recActions = map[string]struct {
	perm  supplyplan.Permission
	from  []supplyplan.RecommendationStatus
	label string
}{
	"approve": {supplyplan.PermTransfersApprove, []supplyplan.RecommendationStatus{supplyplan.RecPending}, "approved"},
	"reject":  {supplyplan.PermTransfersApprove, []supplyplan.RecommendationStatus{supplyplan.RecPending, supplyplan.RecApproved}, "rejected"},
	"execute": {supplyplan.PermTransfersExecute, []supplyplan.RecommendationStatus{supplyplan.RecApproved}, "executed"},
}

func (s *ConsoleServer) applyRec(r *consoleRequest, action, id, comment string) (supplyplan.Recommendation, error) {
	switch action {
	case "approve":
		return s.svc.Transfers.ApproveRecommendation(r.Context, r.P, id, comment)
	case "reject":
		return s.svc.Transfers.RejectRecommendation(r.Context, r.P, id, comment)
	default:
		rec, _, err := s.svc.Transfers.ExecuteRecommendation(r.Context, r.P, id, comment)
		return rec, err
	}
}

func (s *ConsoleServer) recAction(r *consoleRequest) error {
	action := r.Param("action")
	a, ok := recActions[action]
	if !ok {
		return supplyplan.NotFound("action")
	}
	if err := r.require(a.perm, nil); err != nil {
		return err
	}
	comment := r.Form("comment")
	if len(comment) > supplyplan.MaxDescriptionLen {
		return supplyplan.Invalid("comment", "must be at most %d characters", supplyplan.MaxDescriptionLen)
	}
	rec, err := s.applyRec(r, action, r.Param("id"), comment)
	if err != nil {
		return err
	}
	if r.htmx() {
		return s.fragment(r, "recommendations", "rec-row", rowData(s.newView(r, "", "", nil), rec, r.Form("back")))
	}
	return redirect(r, "/recommendations?"+r.Form("back"), "Recommendation "+rec.ID+" "+a.label+".")
}

// maxBulk is the most recommendations one bulk action touches; a wider filter must be narrowed.
const maxBulk = 500

// recsBulk is a bulk action in two steps. preview runs the filter on the server (a dry run: nothing
// changes) and shows the filter, the exact count and the ids it would act on; apply acts on those
// ids only, so the scope can never widen between the preview and the confirmation (a reload of
// the list, a filter lost from the URL).
func (s *ConsoleServer) recsBulk(r *consoleRequest) error {
	action := r.Form("action")
	a, ok := recActions[action]
	if !ok {
		return supplyplan.Invalid("action", "must be approve, reject or execute")
	}
	if err := r.require(a.perm, nil); err != nil {
		return err
	}
	f, err := readRecFilter(r.Form)
	if err != nil {
		return err
	}
	if r.Form("step") == "apply" {
		ids := r.FormAll("id")
		if len(ids) > maxBulk {
			return supplyplan.Invalid("id", "at most %d recommendations per bulk action", maxBulk)
		}
		type outcome struct {
			ID, Status, Error string
		}
		var done, failed int
		results := make([]outcome, 0, len(ids))
		for _, id := range ids {
			rec, err := s.applyRec(r, action, id, r.Form("comment"))
			if err != nil {
				failed++
				results = append(results, outcome{ID: id, Error: errorText(err)})
				continue
			}
			done++
			results = append(results, outcome{ID: id, Status: string(rec.Status)})
		}
		return s.render(r, "bulk", "Bulk "+action, "recommendations", map[string]any{"Step": "done", "Action": action, "Label": a.label,
			"F": f, "Done": done, "Failed": failed, "Results": results})
	}
	// Dry run: every matching recommendation in a state the action applies to.
	var ids []string
	var recs []supplyplan.Recommendation
	matched := 0
	for off := 0; ; off += 100 {
		rf := f.filter()
		rf.Limit, rf.Offset = 100, off
		page, err := s.svc.Transfers.ListRecommendations(r.Context, r.P, rf)
		if err != nil {
			return err
		}
		matched = page.Total
		for _, rec := range page.Items {
			if slices.Contains(a.from, rec.Status) {
				ids = append(ids, rec.ID)
				recs = append(recs, rec)
			}
		}
		if len(page.Items) < 100 || off+100 >= page.Total || len(ids) > maxBulk {
			break
		}
	}
	return s.render(r, "bulk", "Bulk "+action, "recommendations", map[string]any{"Step": "preview", "Action": action, "Label": a.label,
		"F": f, "Matched": matched, "IDs": ids, "Recs": recs, "TooMany": len(ids) > maxBulk, "Max": maxBulk})
}

// ---- events ----

func (s *ConsoleServer) eventsPage(r *consoleRequest) error {
	if err := r.require(supplyplan.PermForecastRead, featureForecasting); err != nil {
		return err
	}
	from, to := r.Query("from"), r.Query("to")
	f := supplyplan.EventFilter{IncludeGlobal: true, IncludeOrgWide: true, Type: supplyplan.EventType(r.Query("type"))}
	today := supplyplan.WeekStart(time.Now()).Add(-28 * 24 * time.Hour)
	f.From, f.To = today, today.Add(180*24*time.Hour)
	if t, err := time.Parse("2006-01-02", from); err == nil {
		f.From = t
	}
	if t, err := time.Parse("2006-01-02", to); err == nil {
		f.To = t
	}
	list, err := s.svc.Forecasting.ListEvents(r.Context, r.P, f)
	if err != nil {
		return err
	}
	off := r.offset()
	total := len(list)
	list = list[min(off, total):min(off+consolePage, total)]
	return s.render(r, "events", "Events", "events", map[string]any{"Events": list, "Pager": newPager(r, total, off, consolePage),
		"From": f.From.Format("2006-01-02"), "To": f.To.Format("2006-01-02"), "Types": supplyplan.EventTypes, "Type": r.Query("type"),
		"Form": eventForm{Type: "PROMOTION"}})
}

// eventForm is the create and edit form's fields.
type eventForm struct {
	ID, Name, Type, StartsAt, EndsAt, LiftPct, Product, Location, Description string
}

func formOfEvent(e supplyplan.ExternalEvent) eventForm {
	f := eventForm{ID: e.ID, Name: e.Name, Type: string(e.Type), StartsAt: e.StartsAt.UTC().Format("2006-01-02"),
		EndsAt: e.EndsAt.UTC().Format("2006-01-02"), Product: e.ProductMasterID, Location: e.LocationID}
	if e.Value != nil {
		if e.Value.LiftPct != nil {
			f.LiftPct = strconv.FormatFloat(*e.Value.LiftPct, 'f', -1, 64)
		}
		f.Description = e.Value.Description
	}
	return f
}

func (s *ConsoleServer) eventPage(r *consoleRequest) error {
	if err := r.require(supplyplan.PermForecastRead, featureForecasting); err != nil {
		return err
	}
	e, err := s.svc.Forecasting.GetEvent(r.Context, r.P, r.Param("id"))
	if err != nil {
		return err
	}
	data := map[string]any{"Event": e, "Form": formOfEvent(e), "Types": supplyplan.EventTypes}
	if lift, err := s.svc.Forecast.EventLift(r.Context, r.P, e.ID); err == nil {
		data["Lift"] = lift
	} else {
		data["LiftError"] = errorText(err)
	}
	return s.render(r, "event", e.Name, "events", data)
}

func (s *ConsoleServer) saveEvent(r *consoleRequest) error {
	if err := r.require(supplyplan.PermForecastWrite, featureForecasting); err != nil {
		return err
	}
	f := eventForm{ID: r.Param("id"), Name: r.Form("name"), Type: r.Form("type"), StartsAt: r.Form("startsAt"), EndsAt: r.Form("endsAt"),
		LiftPct: r.Form("liftPct"), Product: r.Form("productMasterId"), Location: r.Form("locationId"), Description: r.Form("description")}
	in := supplyplan.EventInput{Name: &f.Name, Type: &f.Type, StartsAt: &f.StartsAt, EndsAt: &f.EndsAt}
	var fe supplyplan.FieldErrors
	if f.LiftPct != "" || f.Description != "" {
		in.Value = &supplyplan.EventValueInput{}
		if f.LiftPct != "" {
			v, err := strconv.ParseFloat(f.LiftPct, 64)
			if err != nil {
				fe = supplyplan.FieldErrors{}
				fe.Add("value.liftPct", "must be a number")
			}
			in.Value.LiftPct = &v
		}
		if f.Description != "" {
			in.Value.Description = &f.Description
		}
	}
	if f.Product != "" {
		in.ProductMasterID = &f.Product
	}
	if f.Location != "" {
		in.LocationID = &f.Location
	}
	var e supplyplan.ExternalEvent
	err := fe.Err()
	if err == nil {
		if f.ID == "" {
			e, err = s.svc.Forecasting.CreateEvent(r.Context, r.P, in)
		} else {
			e, err = s.svc.Forecasting.UpdateEvent(r.Context, r.P, f.ID, in)
		}
	}
	if errs := fieldErrors(err); errs != nil {
		r.Ctx.SetStatusCode(fasthttp.StatusBadRequest)
		v := s.newView(r, "Events", "events", map[string]any{"Form": f, "Types": supplyplan.EventTypes})
		v.Errors = errs
		return s.renderView(r, "event-form", v)
	}
	if err != nil {
		return err
	}
	return redirect(r, "/events/"+e.ID, "Event "+e.Name+" saved.")
}

func (s *ConsoleServer) deleteEvent(r *consoleRequest) error {
	if err := r.require(supplyplan.PermForecastWrite, featureForecasting); err != nil {
		return err
	}
	if err := s.svc.Forecasting.DeleteEvent(r.Context, r.P, r.Param("id")); err != nil {
		return err
	}
	return redirect(r, "/events", "Event deleted.")
}

// ---- inventory ----

func (s *ConsoleServer) inventoryPage(r *consoleRequest) error {
	if err := r.require(supplyplan.PermTransfersRead, nil); err != nil {
		return err
	}
	off := r.offset()
	f := supplyplan.InventoryFilter{SKU: r.Query("sku"), LocationID: r.Query("location"), BelowReorder: r.Query("below") == "1",
		Limit: consolePage, Offset: off}
	levels, err := s.svc.Catalog.ListInventory(r.Context, r.P, f)
	if err != nil {
		return err
	}
	transfers, err := s.svc.Transfers.ListTransfers(r.Context, r.P, supplyplan.TransferFilter{ProductMasterID: f.SKU, Limit: 10})
	if err != nil {
		return err
	}
	data := map[string]any{"Levels": levels.Items, "Pager": newPager(r, levels.Total, off, consolePage), "SKU": f.SKU,
		"Location": f.LocationID, "Below": f.BelowReorder, "Transfers": transfers.Items, "TransferTotal": transfers.Total}
	// Bins and ATP are of one SKU at one location: over every SKU of a location they would cost
	// a pass over the location's whole stock per render.
	if f.LocationID != "" && f.SKU != "" {
		if bins, err := s.svc.Transfers.Bins(r.Context, r.P, f.LocationID, f.SKU); err == nil {
			data["Bins"], data["BinTotal"] = bins[:min(len(bins), consolePage)], len(bins)
		}
		if s.svc.Allocation != nil {
			if atp, err := s.svc.Allocation.ATP(r.Context, r.P, supplyplan.ATPQuery{SKU: f.SKU, LocationID: f.LocationID}); err == nil {
				data["ATP"] = atp.Items
			}
		}
	}
	return s.render(r, "inventory", "Inventory", "inventory", data)
}

// ---- alerts ----

func (s *ConsoleServer) alertsPage(r *consoleRequest) error {
	if err := r.require(supplyplan.PermAlertsRead, nil); err != nil {
		return err
	}
	cfg, err := s.svc.Alerts.GetAlertConfig(r.Context, r.P)
	if err != nil {
		return err
	}
	return s.renderAlerts(r, cfg, nil)
}

func (s *ConsoleServer) renderAlerts(r *consoleRequest, cfg supplyplan.AlertConfig, errs map[string][]string) error {
	page, _ := strconv.Atoi(r.Query("page"))
	f := supplyplan.AlertFilter{Type: supplyplan.AlertKind(r.Query("type")), Severity: supplyplan.Severity(r.Query("severity")),
		Page: max(page, 1), Limit: consolePage}
	switch r.Query("delivered") {
	case "true":
		t := true
		f.Delivered = &t
	case "false":
		t := false
		f.Delivered = &t
	}
	hist, err := s.svc.Alerts.ListAlerts(r.Context, r.P, f)
	if err != nil {
		return err
	}
	kinds := make([]string, len(supplyplan.AlertKinds))
	for i, k := range supplyplan.AlertKinds {
		kinds[i] = string(k)
	}
	dests := append(slices.Clone(cfg.Destinations), supplyplan.AlertDestination{Enabled: true})
	types := map[string]bool{}
	for k, v := range cfg.AlertTypes {
		types[string(k)] = v
	}
	pg := newPager(r, hist.Pagination.Total, (f.Page-1)*consolePage, consolePage)
	link := func(page int) string {
		v := url.Values{"page": {strconv.Itoa(page)}}
		for _, k := range []string{"type", "severity", "delivered"} {
			if x := r.Query(k); x != "" {
				v.Set(k, x)
			}
		}
		return "/alerts?" + v.Encode()
	}
	prev, next := "", ""
	if f.Page > 1 {
		prev = link(f.Page - 1)
	}
	if f.Page < hist.Pagination.TotalPages {
		next = link(f.Page + 1)
	}
	pg.Prev, pg.Next = prev, next
	v := s.newView(r, "Alerts", "alerts", map[string]any{"Config": cfg, "Dests": dests, "Types": types, "Kinds": kinds,
		"Alerts": hist.Alerts, "Pager": pg, "Type": string(f.Type), "Severity": string(f.Severity), "Delivered": r.Query("delivered"),
		"Severities": supplyplan.Severities})
	v.Errors = errs
	if errs != nil {
		r.Ctx.SetStatusCode(fasthttp.StatusBadRequest)
	}
	return s.renderView(r, "alerts", v)
}

func (s *ConsoleServer) saveAlertConfig(r *consoleRequest) error {
	if err := r.require(supplyplan.PermAlertsWrite, nil); err != nil {
		return err
	}
	enabled := r.Form("enabled") == "on"
	in := supplyplan.AlertConfigInput{Enabled: &enabled}
	fe := supplyplan.FieldErrors{}
	cd, err := strconv.ParseFloat(r.Form("cooldownMinutes"), 64)
	if err != nil {
		fe.Add("cooldownMinutes", "must be a number")
	}
	in.CooldownMinutes = &cd
	types := map[string]*bool{}
	for _, k := range supplyplan.AlertKinds {
		on := slices.Contains(r.FormAll("alertTypes"), string(k))
		types[string(k)] = &on
	}
	in.AlertTypes = &types
	dtypes, values, names, ids := r.FormAll("destType"), r.FormAll("destValue"), r.FormAll("destName"), r.FormAll("destId")
	on := r.FormAll("destEnabled")
	dests := []supplyplan.AlertDestinationInput{}
	for i := range values {
		if strings.TrimSpace(values[i]) == "" || i >= len(dtypes) || i >= len(names) || i >= len(ids) {
			continue
		}
		d := supplyplan.AlertDestinationInput{Type: &dtypes[i], Value: &values[i]}
		if names[i] != "" {
			d.Name = &names[i]
		}
		if ids[i] != "" {
			d.ID = &ids[i]
		}
		en := slices.Contains(on, strconv.Itoa(i))
		d.Enabled = &en
		dests = append(dests, d)
	}
	in.Destinations = &dests
	var cfg supplyplan.AlertConfig
	if err = fe.Err(); err == nil {
		cfg, err = s.svc.Alerts.PutAlertConfig(r.Context, r.P, in)
	}
	if errs := fieldErrors(err); errs != nil {
		cur, gerr := s.svc.Alerts.GetAlertConfig(r.Context, r.P)
		if gerr != nil {
			return gerr
		}
		return s.renderAlerts(r, cur, errs)
	}
	if err != nil {
		return err
	}
	_ = cfg
	return redirect(r, "/alerts", "Alert configuration saved.")
}

func (s *ConsoleServer) triggerAlert(r *consoleRequest) error {
	if err := r.require(supplyplan.PermAlertsWrite, nil); err != nil {
		return err
	}
	typ, sev, msg := r.Form("type"), r.Form("severity"), r.Form("message")
	in := supplyplan.TriggerInput{Type: &typ, Severity: &sev}
	if msg != "" {
		in.Message = &msg
	}
	bypass := r.Form("bypassCooldown") == "on"
	in.BypassCooldown = &bypass
	a, err := s.svc.Alerts.TriggerAlert(r.Context, r.P, in)
	if errs := fieldErrors(err); errs != nil {
		cur, gerr := s.svc.Alerts.GetAlertConfig(r.Context, r.P)
		if gerr != nil {
			return gerr
		}
		return s.renderAlerts(r, cur, errs)
	}
	if err != nil {
		return err
	}
	return redirect(r, "/alerts", "Alert "+a.ID+" triggered.")
}

// ---- imports ----

func (s *ConsoleServer) importsPage(r *consoleRequest) error {
	if err := r.require(supplyplan.PermTransfersRead, nil); err != nil {
		return err
	}
	jobs, err := s.svc.Imports.ListImportJobs(r.Context, r.P)
	if err != nil {
		return err
	}
	off := r.offset()
	total := len(jobs)
	jobs = jobs[min(off, total):min(off+consolePage, total)]
	return s.render(r, "imports", "Imports", "imports", map[string]any{"Jobs": jobs, "Pager": newPager(r, total, off, consolePage),
		"Kinds": supplyplan.ImportKinds, "HaveKey": r.sess.ImportKey != ""})
}

func (s *ConsoleServer) importJob(r *consoleRequest) error {
	if err := r.require(supplyplan.PermTransfersRead, nil); err != nil {
		return err
	}
	j, err := s.svc.Imports.GetImportJob(r.Context, r.P, r.Param("id"))
	if err != nil {
		return err
	}
	if r.htmx() {
		return s.fragment(r, "imports", "job", &j)
	}
	return s.render(r, "import", "Import "+j.JobID, "imports", &j)
}

// uploadImport submits an uploaded JSON or CSV file as an import job (a CSV file, sent as text/csv
// or named *.csv, converted to the kind's JSON body as the API converts a text/csv body). The import endpoints take import
// keys (scope import:write), not role keys: the form asks for one (kept for the session) and the
// same check as the API's applies to it.
func (s *ConsoleServer) uploadImport(r *consoleRequest) error {
	if err := r.require(supplyplan.PermTransfersRead, nil); err != nil {
		return err
	}
	key := r.Form("importKey")
	if key == "" {
		key = r.sess.ImportKey
	}
	fe := supplyplan.FieldErrors{}
	kind := supplyplan.ImportKind(r.Form("kind"))
	if !slices.Contains(supplyplan.ImportKinds, kind) {
		fe.Add("kind", "must be one of catalog, inventory, suppliers, purchase-orders, orders, demand-history")
	}
	upload := r.files["file"]
	if len(upload.data) == 0 {
		fe.Add("file", "choose a JSON file (the body of POST /api/import/<kind>) or a CSV file (its columns, as POST /api/import/<kind> takes with Content-Type text/csv)")
	}
	var ip supplyplan.Principal
	if key == "" {
		fe.Add("importKey", "an import key (scope import:write) is required")
	} else if p, ok := s.svc.Auth.Authenticate(key); !ok {
		fe.Add("importKey", "unknown or revoked key")
	} else if err := importCheck(p, supplyplan.ScopeImportWrite); err != nil || p.OrgID != r.P.OrgID {
		fe.Add("importKey", "must be an import key of this organization with scope import:write")
	} else {
		ip = p
	}
	err := fe.Err()
	var job supplyplan.ImportJob
	if err == nil {
		file := upload.data
		if upload.isCSV() {
			// The API's conversion (docs/api.md#csv): the CSV becomes the kind's JSON body.
			file, err = csvImportBody(kind, file, s.cfg.ImportMaxRows)
		}
		var rows []json.RawMessage
		if err == nil {
			rows, err = importjson.SplitBody(kind, file, s.cfg.ImportMaxRows)
		}
		if err == nil {
			job, err = s.svc.Imports.SubmitImport(r.Context, ip, kind, file, rows)
		}
	}
	if errs := fieldErrors(err); errs != nil {
		r.Ctx.SetStatusCode(fasthttp.StatusBadRequest)
		jobs, lerr := s.svc.Imports.ListImportJobs(r.Context, r.P)
		if lerr != nil {
			return lerr
		}
		jobs = jobs[:min(len(jobs), consolePage)]
		v := s.newView(r, "Imports", "imports", map[string]any{"Jobs": jobs, "Pager": newPager(r, len(jobs), 0, consolePage),
			"Kinds": supplyplan.ImportKinds, "HaveKey": r.sess.ImportKey != "", "Kind": string(kind)})
		v.Errors = errs
		return s.renderView(r, "imports", v)
	}
	if err != nil {
		return err
	}
	if err := s.sessions.setImportKey(r.Context, r.sess.ID, key); err != nil {
		s.log.Warn("console session import key not kept", "err", err) // the import itself is accepted
	}
	return redirect(r, "/imports/"+job.JobID, "Import accepted: "+strconv.Itoa(job.RowCount)+" rows.")
}

// parseMultipart reads a multipart/form-data body into cr.form and cr.files.
func parseMultipart(b []byte, boundary string, cr *consoleRequest) error {
	if boundary == "" {
		return supplyplan.Invalid("content-type", "multipart/form-data needs a boundary")
	}
	mr := multipart.NewReader(bytes.NewReader(b), boundary)
	cr.files = map[string]uploadedFile{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return supplyplan.Invalid("body", "is not a valid multipart form")
		}
		data, err := io.ReadAll(part)
		if err != nil {
			return supplyplan.Invalid("body", "is not a valid multipart form")
		}
		if part.FileName() != "" {
			cr.files[part.FormName()] = uploadedFile{name: part.FileName(), contentType: part.Header.Get("Content-Type"), data: data}
		} else {
			cr.form.Add(part.FormName(), string(data))
		}
	}
}

// ---- webhooks ----

func (s *ConsoleServer) webhooksPage(r *consoleRequest) error {
	if err := r.require(supplyplan.PermWebhooksRead, nil); err != nil {
		return err
	}
	eps, err := s.svc.Webhooks.ListEndpoints(r.Context, r.P)
	if err != nil {
		return err
	}
	return s.render(r, "webhooks", "Webhooks", "webhooks", map[string]any{"Endpoints": eps, "EventTypes": supplyplan.WebhookEventTypes()})
}

func (s *ConsoleServer) createWebhook(r *consoleRequest) error {
	if err := r.require(supplyplan.PermWebhooksWrite, nil); err != nil {
		return err
	}
	u, desc := r.Form("url"), r.Form("description")
	types := r.FormAll("eventTypes")
	in := supplyplan.WebhookEndpointInput{URL: &u, Description: &desc, EventTypes: &types}
	created, err := s.svc.Webhooks.CreateEndpoint(r.Context, r.P, in)
	if errs := fieldErrors(err); errs != nil {
		eps, lerr := s.svc.Webhooks.ListEndpoints(r.Context, r.P)
		if lerr != nil {
			return lerr
		}
		r.Ctx.SetStatusCode(fasthttp.StatusBadRequest)
		v := s.newView(r, "Webhooks", "webhooks", map[string]any{"Endpoints": eps, "EventTypes": supplyplan.WebhookEventTypes()})
		v.Errors = errs
		return s.renderView(r, "webhooks", v)
	}
	if err != nil {
		return err
	}
	// The signing secret is shown once, on this response only.
	return s.render(r, "webhooks", "Webhooks", "webhooks", map[string]any{"Created": created.Endpoint, "Secret": created.Secret})
}

func (s *ConsoleServer) webhookPage(r *consoleRequest) error {
	if err := r.require(supplyplan.PermWebhooksRead, nil); err != nil {
		return err
	}
	ep, err := s.svc.Webhooks.GetEndpoint(r.Context, r.P, r.Param("id"))
	if err != nil {
		return err
	}
	page, _ := strconv.Atoi(r.Query("page"))
	status := r.Query("status")
	if !slices.Contains([]string{"", supplyplan.DeliveryPending, supplyplan.DeliverySucceeded, supplyplan.DeliveryFailed}, status) {
		return supplyplan.Invalid("status", "must be PENDING, SUCCEEDED or FAILED")
	}
	dp, err := s.svc.Webhooks.ListDeliveries(r.Context, r.P, ep.ID, supplyplan.DeliveryFilter{Status: status, Page: max(page, 1), Limit: consolePage})
	if err != nil {
		return err
	}
	return s.render(r, "webhook", "Webhook "+ep.URL, "webhooks", map[string]any{"Endpoint": ep, "Deliveries": dp.Deliveries,
		"Pagination": dp.Pagination, "Status": status})
}

func (s *ConsoleServer) retryDelivery(r *consoleRequest) error {
	if err := r.require(supplyplan.PermWebhooksWrite, nil); err != nil {
		return err
	}
	d, err := s.svc.Webhooks.RetryDelivery(r.Context, r.P, r.Param("id"), r.Param("deliveryId"))
	if err != nil {
		return err
	}
	return redirect(r, "/webhooks/"+r.Param("id"), "Delivery "+d.ID+" queued for redelivery.")
}

// ---- platform ----

func (s *ConsoleServer) platformPage(r *consoleRequest) error {
	if err := r.requirePlatform(); err != nil {
		return err
	}
	orgs, err := s.svc.Platform.ListOrganizations(r.Context)
	if err != nil {
		return err
	}
	off := r.offset()
	total := len(orgs)
	orgs = orgs[min(off, total):min(off+consolePage, total)]
	return s.render(r, "platform", "Platform", "platform", map[string]any{"Orgs": orgs, "Pager": newPager(r, total, off, consolePage)})
}

func (s *ConsoleServer) platformCreateOrg(r *consoleRequest) error {
	if err := r.requirePlatform(); err != nil {
		return err
	}
	name, slug, plan := r.Form("name"), r.Form("slug"), r.Form("plan")
	in := supplyplan.OrganizationInput{Name: &name, Slug: &slug}
	if plan != "" {
		in.Plan = &plan
	}
	org, err := s.svc.Platform.CreateOrganization(r.Context, in)
	if err != nil {
		return err
	}
	return redirect(r, "/platform/orgs/"+org.ID, "Organization "+org.Name+" created.")
}

func (s *ConsoleServer) platformOrg(r *consoleRequest) error {
	if err := r.requirePlatform(); err != nil {
		return err
	}
	return s.renderOrg(r, "", nil)
}

func (s *ConsoleServer) renderOrg(r *consoleRequest, secret string, created *supplyplan.APIKey) error {
	org, err := s.svc.Platform.GetOrganization(r.Context, r.Param("id"))
	if err != nil {
		return err
	}
	keys, err := s.svc.Platform.ListAPIKeys(r.Context, org.ID)
	if err != nil {
		return err
	}
	data := map[string]any{"O": org, "Keys": keys, "Roles": supplyplan.Roles, "Secret": secret, "CreatedKey": created,
		"Entitlements": strings.Join(org.Entitlements, ", ")}
	if s.svc.Billing != nil {
		if b, err := s.svc.Billing.GetBilling(r.Context, org.ID); err == nil {
			data["Billing"] = b
		}
	}
	return s.render(r, "org", org.Name, "platform", data)
}

func (s *ConsoleServer) platformCreateKey(r *consoleRequest) error {
	if err := r.requirePlatform(); err != nil {
		return err
	}
	name := r.Form("name")
	in := supplyplan.APIKeyInput{}
	if name != "" {
		in.Name = &name
	}
	if role := r.Form("role"); role == "IMPORT" {
		sc := []string{string(supplyplan.ScopeImportRead), string(supplyplan.ScopeImportWrite)}
		in.Scopes = &sc
	} else {
		in.Role = &role
	}
	key, secret, err := s.svc.Platform.CreateAPIKey(r.Context, r.Param("id"), in)
	if err != nil {
		return err
	}
	return s.renderOrg(r, secret, &key)
}

func (s *ConsoleServer) platformRevokeKey(r *consoleRequest) error {
	if err := r.requirePlatform(); err != nil {
		return err
	}
	if err := s.svc.Platform.RevokeAPIKey(r.Context, r.Param("id"), r.Param("keyId")); err != nil {
		return err
	}
	return redirect(r, "/platform/orgs/"+r.Param("id"), "Key revoked: its console sessions ended too.")
}

func (s *ConsoleServer) platformEntitlements(r *consoleRequest) error {
	if err := r.requirePlatform(); err != nil {
		return err
	}
	var ents []string
	for _, e := range strings.Split(r.Form("entitlements"), ",") {
		if e = strings.TrimSpace(e); e != "" {
			ents = append(ents, e)
		}
	}
	if _, err := s.svc.Platform.SetEntitlements(r.Context, r.Param("id"), ents); err != nil {
		return err
	}
	return redirect(r, "/platform/orgs/"+r.Param("id"), "Entitlements saved.")
}

// ---- loops (read-only: the catalog and each loop's versions and audit timeline) ----

// loopCaller is the session as the loop catalog's caller: the catalog applies its own rules to it,
// as it does to the catalog listener's callers (http/loopcatalog.go).
func (r *consoleRequest) loopCaller() supplyplan.LoopCaller {
	return supplyplan.LoopCallerOf(r.P, r.Org)
}

func (s *ConsoleServer) loopsPage(r *consoleRequest) error {
	if s.svc.Loops == nil {
		return supplyplan.Errorf(supplyplan.ENOTFOUND, "The loop catalog is not running")
	}
	off := r.offset()
	p, err := s.svc.Loops.ListLoops(r.Context, r.loopCaller(), supplyplan.LoopFilter{Query: r.Query("text"), Limit: consolePage, Offset: off})
	if err != nil {
		return err
	}
	return s.render(r, "loops", "Loops", "loops", map[string]any{"Loops": p.Items, "Pager": newPager(r, p.Total, off, consolePage), "Text": r.Query("text")})
}

func (s *ConsoleServer) loopPage(r *consoleRequest) error {
	if s.svc.Loops == nil {
		return supplyplan.Errorf(supplyplan.ENOTFOUND, "The loop catalog is not running")
	}
	c := r.loopCaller()
	doc, err := s.svc.Loops.GetLoop(r.Context, c, r.Query("name"))
	if err != nil {
		return err
	}
	off := r.offset()
	audit, err := s.svc.Loops.LoopAudit(r.Context, c, doc.Name, consolePage, off)
	if err != nil {
		return err
	}
	return s.render(r, "loop", doc.Name, "loops", map[string]any{"Doc": doc, "Audit": audit.Items, "Pager": newPager(r, audit.Total, off, consolePage)})
}

// ---- loop instances (read-only: the runtime's instances of the session's organization) ----

// loopRuntime is the runtime the instance screens read, after the session's read check (any role
// of the organization reads, as the runtime's read scope does; the platform key has no instances).
func (s *ConsoleServer) loopRuntime(r *consoleRequest) (supplyplan.LoopRuntimeService, error) {
	if err := r.require(supplyplan.PermForecastRead, nil); err != nil {
		return nil, err
	}
	if s.svc.LoopRuntime == nil {
		return nil, supplyplan.Errorf(supplyplan.ENOTFOUND, "The loop runtime is not running")
	}
	return s.svc.LoopRuntime, nil
}

// loopInstancesPage lists the organization's instances, newest first, filtered by status, loop
// and business key (in the URL) and paginated, through the runtime's ListInstances (the call of
// GET /v1/instances).
func (s *ConsoleServer) loopInstancesPage(r *consoleRequest) error {
	rtm, err := s.loopRuntime(r)
	if err != nil {
		return err
	}
	off := r.offset()
	f := supplyplan.LoopInstanceFilter{Status: supplyplan.LoopInstanceStatus(r.Query("status")), Loop: r.Query("loop"),
		BusinessKey: r.Query("businessKey"), Limit: consolePage, Offset: off}
	if err := f.Validate(); err != nil {
		return err
	}
	p, err := rtm.ListInstances(r.Context, r.P.OrgID, f)
	if err != nil {
		return err
	}
	return s.render(r, "loop-instances", "Loop instances", "loops", map[string]any{"Instances": p.Items,
		"Pager": newPager(r, p.Total, off, consolePage), "Filter": f, "Statuses": supplyplan.LoopInstanceStatuses})
}

// loopInstancePage shows one instance, its audit timeline (events after afterSeq, a page at a
// time) and the verification of its hash chain (the calls of GET /v1/instances/{id}, .../events
// and .../audit/verify).
func (s *ConsoleServer) loopInstancePage(r *consoleRequest) error {
	rtm, err := s.loopRuntime(r)
	if err != nil {
		return err
	}
	id := r.Param("id")
	in, err := rtm.GetInstance(r.Context, r.P.OrgID, id)
	if err != nil {
		return err
	}
	after, err := strconv.ParseInt(r.Query("afterSeq"), 10, 64)
	if err != nil || after < 0 {
		after = 0
	}
	evs, err := rtm.Events(r.Context, r.P.OrgID, id, after, consolePage)
	if err != nil {
		return err
	}
	v, err := rtm.VerifyAudit(r.Context, r.P.OrgID, id)
	if err != nil {
		return err
	}
	next := ""
	if len(evs) == consolePage && evs[len(evs)-1].Seq < in.LastSeq {
		next = "/loops/instances/" + url.PathEscape(id) + "?afterSeq=" + strconv.FormatInt(evs[len(evs)-1].Seq, 10)
	}
	return s.render(r, "loop-instance", "Instance "+in.ID, "loops", map[string]any{"Instance": in, "Events": evs,
		"Verify": v, "Next": next, "First": after > 0})
}
