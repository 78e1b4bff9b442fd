package actors

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/analytics"
	"github.com/supplyplan/supplyplan/internal/importjson"
	"github.com/supplyplan/supplyplan/internal/wait"
	"github.com/supplyplan/supplyplan/streams"
)

// Each service is exercised here on a real core (streams journal in a temporary dir, the embedded
// demand store), without HTTP: the REST tests in cmd/supplyplan cover the API on top.

func embeddedDemand(t *testing.T, dir string) supplyplan.DemandStore {
	t.Helper()
	d := analytics.NewEmbeddedStore(analytics.EmbeddedConfig{Dir: filepath.Join(dir, "demand")})
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// recorder is an EventPublisher that keeps what it is given and passes it on.
type recorder struct {
	mu   sync.Mutex
	evs  []supplyplan.DomainEvent
	next supplyplan.EventPublisher
}

func (r *recorder) Publish(e supplyplan.DomainEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
	if r.next != nil {
		r.next.Publish(e)
	}
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.evs))
	for i, e := range r.evs {
		out[i] = e.Type
	}
	return out
}

// withBus wires the services' events as cmd/supplyplan does: a bus that the relay and the alert
// evaluator listen to, behind a recorder.
func withBus(t *testing.T, o options) (*services, *recorder) {
	t.Helper()
	bus := streams.NewBus()
	rec := &recorder{next: bus}
	o.events = rec
	s := newServices(t, o)
	t.Cleanup(bus.Subscribe(s.webhooks.HandleEvent))
	t.Cleanup(bus.Subscribe(s.alerts.HandleEvent))
	return s, rec
}

// seedStock imports product P (price 10, cost 4) at DC (500 on hand, reorder point 20) and at
// STORE (5, reorder point 30), as cmd/supplyplan's transfer tests do.
func seedStock(t *testing.T, s *services, p supplyplan.Principal) {
	t.Helper()
	for kind, rows := range map[supplyplan.ImportKind][]string{
		supplyplan.ImportCatalog: {`{"externalId":"P","name":"Orange juice","unitPrice":10,"unitCost":4}`},
	} {
		if j := submit(t, s, p, kind, rows); j.Status != supplyplan.JobCompleted {
			t.Fatalf("%s: %+v", kind, j)
		}
	}
	if j := submit(t, s, p, supplyplan.ImportInventory, []string{`{"skuId":"P","locationId":"DC","quantityOnHand":500,"reorderPoint":20}`,
		`{"skuId":"P","locationId":"STORE","quantityOnHand":5,"reorderPoint":30}`}); j.Status != supplyplan.JobCompleted {
		t.Fatalf("inventory: %+v", j)
	}
}

func TestPlatformService(t *testing.T) {
	dir := t.TempDir()
	s := newServices(t, options{dir: dir})
	ctx := context.Background()
	name, slug, role := "Acme", "acme", "PLANNER"
	org, err := s.platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: &name, Slug: &slug})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.platform.CreateOrganization(ctx, supplyplan.OrganizationInput{Name: &name, Slug: &slug}); err == nil {
		t.Fatal("a second organization with the same slug was created")
	}
	key, secret, err := s.platform.CreateAPIKey(ctx, org.ID, supplyplan.APIKeyInput{Role: &role})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := s.platform.Authenticate(secret)
	if !ok || p.OrgID != org.ID || p.Role != supplyplan.RolePlanner || p.KeyID != key.ID {
		t.Fatalf("Authenticate = %+v, %v", p, ok)
	}
	if _, ok := s.platform.Organization(org.ID); !ok {
		t.Fatal("Organization does not find the new organization")
	}
	// A tenant's actor runs from the moment the organization exists.
	if _, err := s.catalog.ListProducts(ctx, p, supplyplan.ProductFilter{}); err != nil {
		t.Fatal(err)
	}
	if err := s.platform.RevokeAPIKey(ctx, org.ID, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.platform.Authenticate(secret); ok {
		t.Fatal("a revoked key still authenticates")
	}
	ev, err := s.platform.CreateGlobalEvent(ctx, supplyplan.EventInput{Name: ptrTo("Black Friday"), Type: ptrTo("HOLIDAY"),
		StartsAt: ptrTo("2026-11-27"), EndsAt: ptrTo("2026-11-28")})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.forecasting.GetEvent(ctx, p, ev.ID); err != nil || got.ID != ev.ID || !got.IsGlobal {
		t.Fatalf("the tenant sees the global event: %+v, %v", got, err)
	}

	// Everything survives a restart.
	s.close(t)
	s2 := newServices(t, options{dir: dir})
	if _, ok := s2.platform.Organization(org.ID); !ok {
		t.Fatal("the organization is gone after a restart")
	}
	if evs, err := s2.platform.ListGlobalEvents(ctx); err != nil || len(evs) != 1 {
		t.Fatalf("global events after a restart: %v, %v", evs, err)
	}
	if err := s2.platform.DeleteGlobalEvent(ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.platform.GetOrganization(ctx, "org_nope"); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("unknown organization: %v", err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// Publishing records the forecast of record moving; generating stores a version; an event write
// leaves a change entry whose figures the recorder fills in.
func TestForecastingAndForecastsServices(t *testing.T) {
	dir := t.TempDir()
	demand := embeddedDemand(t, dir)
	s := newServices(t, options{dir: dir, demand: demand})
	p := s.bootstrap(t)
	ctx := context.Background()
	seedStock(t, s, p)
	var rows []supplyplan.DemandRow
	for w := 1; w <= 30; w++ {
		rows = append(rows, supplyplan.DemandRow{SKU: mustProductID(t, s, p, "P"), Location: "DC", Channel: supplyplan.ChannelAll,
			Week: supplyplan.WeekStart(time.Now()).AddDate(0, 0, -7*w), Actual: 100})
	}
	if err := demand.UpsertWeeks(ctx, p.OrgID, rows); err != nil {
		t.Fatal(err)
	}
	sc, err := s.forecasting.CreateScenario(ctx, p, supplyplan.ScenarioInput{Name: ptrTo("Base")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.forecasts.GenerateScenario(ctx, p, sc.ID, supplyplan.GenerateScenarioInput{HorizonWeeks: ptrTo(4)})
	if err != nil {
		t.Fatal(err)
	}
	if res.SeriesCount != 1 || res.TotalQuantity < 350 || res.TotalQuantity > 450 || res.PreviousTotal != nil {
		t.Fatalf("generate = %+v, want one series of about 4 x 100", res)
	}
	if _, err := s.forecasting.PublishScenario(ctx, p, sc.ID); err != nil {
		t.Fatal(err)
	}
	changes, _, err := s.forecasts.ChangeHistory(ctx, p, supplyplan.ChangeFilter{ScenarioID: sc.ID})
	if err != nil || len(changes) != 2 || changes[0].ChangeType != supplyplan.ChangePublish ||
		changes[0].NewTotal == nil || *changes[0].NewTotal != res.TotalQuantity || changes[0].PreviousTotal != nil {
		t.Fatalf("change history = %+v, %v; want publish (none -> %v) after generate", changes, err, res.TotalQuantity)
	}
	fc, err := s.forecasts.Forecast(ctx, p, supplyplan.ForecastQuery{ProductMasterID: "P", LocationID: "DC", HorizonWeeks: 4})
	if err != nil || len(fc.Forecasts) != 1 || len(fc.Forecasts[0].Periods) != 4 {
		t.Fatalf("forecast = %+v, %v", fc, err)
	}
	before := fc.Forecasts[0].Periods[1].Quantity
	// A promotion next week: the change entry is journaled PENDING with the write, then computed.
	next := supplyplan.WeekStart(time.Now()).AddDate(0, 0, 7)
	_, err = s.forecasting.CreateEvent(ctx, p, supplyplan.EventInput{Name: ptrTo("Promo"), Type: ptrTo("PROMOTION"),
		ProductMasterID: ptrTo("P"), LocationID: ptrTo("DC"), StartsAt: ptrTo(next.Format(time.DateOnly)),
		EndsAt: ptrTo(next.AddDate(0, 0, 7).Format(time.DateOnly)), Value: &supplyplan.EventValueInput{LiftPct: ptrTo(0.5)}})
	if err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, func() error {
		all, _, err := s.forecasts.ChangeHistory(ctx, p, supplyplan.ChangeFilter{})
		if err != nil {
			return err
		}
		if all[0].ChangeType != supplyplan.ChangeEventCreated || all[0].EffectStatus != supplyplan.EffectComputed || all[0].Delta == nil || *all[0].Delta <= 0 {
			return fmt.Errorf("newest entry %+v, want the event's computed positive effect", all[0])
		}
		return nil
	})
	// The event write invalidated the cached forecast of its series.
	fc, err = s.forecasts.Forecast(ctx, p, supplyplan.ForecastQuery{ProductMasterID: "P", LocationID: "DC", HorizonWeeks: 4})
	if err != nil || fc.Forecasts[0].Periods[1].Quantity <= before {
		t.Fatalf("next week's forecast %v after a +50%% promotion, was %v (%v)", fc.Forecasts[0].Periods[1].Quantity, before, err)
	}
	if _, err := s.forecasts.GenerateScenario(ctx, p, sc.ID, supplyplan.GenerateScenarioInput{HorizonWeeks: ptrTo(0)}); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
		t.Fatalf("a zero horizon: %v", err)
	}
}

func mustProductID(t *testing.T, s *services, p supplyplan.Principal, sku string) string {
	t.Helper()
	pr, err := s.catalog.GetProduct(context.Background(), p, sku)
	if err != nil {
		t.Fatal(err)
	}
	return pr.ID
}

// Approving a recommendation happens in Transfers; each step's event is published once durable.
func TestTransfersService(t *testing.T) {
	s, rec := withBus(t, options{})
	p := s.bootstrap(t)
	ctx := context.Background()
	seedStock(t, s, p)
	gen, err := s.transfers.GenerateRecommendations(ctx, p, supplyplan.GenerateInput{UnitMargin: ptrTo(6.0)})
	if err != nil || len(gen.Created) != 1 {
		t.Fatalf("generate = %+v, %v", gen, err)
	}
	r := gen.Created[0]
	if r.SourceLocationID != "DC" || r.DestLocationID != "STORE" || r.Status != supplyplan.RecPending {
		t.Fatalf("recommendation %+v", r)
	}
	if _, _, err := s.transfers.ExecuteRecommendation(ctx, p, r.ID, ""); supplyplan.ErrorCode(err) != supplyplan.ECONFLICT {
		t.Fatalf("execute before approve: %v", err)
	}
	ap, err := s.transfers.ApproveRecommendation(ctx, p, r.ID, "go")
	if err != nil || ap.Status != supplyplan.RecApproved {
		t.Fatalf("approve = %+v, %v", ap, err)
	}
	if _, err := s.transfers.ApproveRecommendation(ctx, p, r.ID, ""); supplyplan.ErrorCode(err) != supplyplan.ECONFLICT {
		t.Fatalf("approve twice: %v", err)
	}
	done, trf, err := s.transfers.ExecuteRecommendation(ctx, p, r.ID, "")
	if err != nil || done.Status != supplyplan.RecExecuted || trf.RecommendationID != r.ID {
		t.Fatalf("execute = %+v %+v %v", done, trf, err)
	}
	if _, err := s.transfers.UpdateTransfer(ctx, p, trf.ID, supplyplan.TransferUpdate{Status: ptrTo(string(supplyplan.TransferInTransit))}); err != nil {
		t.Fatal(err)
	}
	want := []string{"recommendation.created", "recommendation.approved", "recommendation.executed", "transfer.created", "transfer.in_transit"}
	var got []string
	for _, typ := range rec.types() {
		if slices.Contains(want, typ) {
			got = append(got, typ)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if _, err := s.transfers.GetRecommendation(ctx, p, "rec_nope"); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("unknown recommendation: %v", err)
	}
}

// sender is a supplyplan.Sender that records what it sends and answers 200.
type sender struct {
	mu   sync.Mutex
	sent []supplyplan.OutboundMessage
}

func (f *sender) Send(_ context.Context, m supplyplan.OutboundMessage) supplyplan.SendResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, m)
	return supplyplan.SendResult{StatusCode: 200}
}

func (f *sender) CheckURL(_ context.Context, field, raw string) error {
	if raw == "https://private.example/hook" {
		return supplyplan.Invalid(field, "resolves to a private address")
	}
	return nil
}

func (f *sender) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sent)
}

// An endpoint gets the tenant's events through the relay and the delivery workers; the
// destination check of the sender applies.
func TestWebhooksService(t *testing.T) {
	snd := &sender{}
	s, _ := withBus(t, options{outbound: OutboundConfig{Sender: snd}})
	p := s.bootstrap(t)
	ctx := context.Background()
	if _, err := s.webhooks.CreateEndpoint(ctx, p, supplyplan.WebhookEndpointInput{URL: ptrTo("https://private.example/hook")}); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
		t.Fatalf("a private destination: %v", err)
	}
	ep, err := s.webhooks.CreateEndpoint(ctx, p, supplyplan.WebhookEndpointInput{URL: ptrTo("https://hooks.example/in"),
		EventTypes: &[]string{"transfer.created"}})
	if err != nil || ep.Secret == "" {
		t.Fatalf("create = %+v, %v", ep, err)
	}
	seedStock(t, s, p)
	if _, err := s.transfers.CreateTransfer(ctx, p, supplyplan.TransferInput{ProductMasterID: ptrTo("P"), SourceLocationID: ptrTo("DC"),
		DestLocationID: ptrTo("STORE"), Quantity: ptrTo(5.0)}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, func() error {
		page, err := s.webhooks.ListDeliveries(ctx, p, ep.Endpoint.ID, supplyplan.DeliveryFilter{})
		if err != nil {
			return err
		}
		if len(page.Deliveries) != 1 || page.Deliveries[0].Status != supplyplan.DeliverySucceeded {
			return fmt.Errorf("deliveries %+v", page.Deliveries)
		}
		return nil
	})
	if snd.count() != 1 {
		t.Fatalf("%d messages sent, want the one transfer.created", snd.count())
	}
	rot, err := s.webhooks.RotateEndpointSecret(ctx, p, ep.Endpoint.ID)
	if err != nil || rot.Secret == ep.Secret {
		t.Fatalf("rotate = %+v, %v", rot, err)
	}
	if err := s.webhooks.DeleteEndpoint(ctx, p, ep.Endpoint.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.webhooks.GetEndpoint(ctx, p, ep.Endpoint.ID); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("a deleted endpoint: %v", err)
	}
}

// Manual alerts honour the cooldown; an evaluation finds the stockout of seeded stock.
func TestAlertsService(t *testing.T) {
	snd := &sender{}
	s, _ := withBus(t, options{outbound: OutboundConfig{Sender: snd}})
	p := s.bootstrap(t)
	ctx := context.Background()
	seedStock(t, s, p)
	types := map[string]*bool{}
	for _, k := range supplyplan.AlertKinds {
		types[string(k)] = ptrTo(true)
	}
	cfg, err := s.alerts.PutAlertConfig(ctx, p, supplyplan.AlertConfigInput{Enabled: ptrTo(true), AlertTypes: &types, CooldownMinutes: ptrTo(60.0),
		Destinations: &[]supplyplan.AlertDestinationInput{{Type: ptrTo("WEBHOOK"), Value: ptrTo("https://hooks.example/alerts"), Enabled: ptrTo(true)}}})
	if err != nil || len(cfg.Destinations) != 1 {
		t.Fatalf("config = %+v, %v", cfg, err)
	}
	in := supplyplan.TriggerInput{Type: ptrTo("stockout"), Severity: ptrTo("HIGH"), Message: ptrTo("out"), ProductMasterID: ptrTo("P"), LocationID: ptrTo("STORE")}
	a, err := s.alerts.TriggerAlert(ctx, p, in)
	if err != nil || a.ProductMasterID == "" || a.Source != "manual" {
		t.Fatalf("trigger = %+v, %v", a, err)
	}
	if _, err := s.alerts.TriggerAlert(ctx, p, in); supplyplan.ErrorCode(err) != supplyplan.ERATELIMITED {
		t.Fatalf("a second alert within the cooldown: %v", err)
	}
	in.BypassCooldown = ptrTo(true)
	if _, err := s.alerts.TriggerAlert(ctx, p, in); err != nil {
		t.Fatalf("bypassing the cooldown: %v", err)
	}
	in.ProductMasterID = ptrTo("NOPE")
	if _, err := s.alerts.TriggerAlert(ctx, p, in); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
		t.Fatalf("an unknown product: %v", err)
	}
	rep, err := s.alerts.EvaluateAlerts(ctx, p)
	if err != nil || rep.SKULocations != 2 || rep.Conditions == 0 {
		t.Fatalf("evaluation = %+v, %v", rep, err)
	}
	page, err := s.alerts.ListAlerts(ctx, p, supplyplan.AlertFilter{})
	if err != nil || len(page.Alerts) < 2 {
		t.Fatalf("alerts = %+v, %v", page, err)
	}
	wait.Eventually(t, 20*time.Second, func() error {
		if n := snd.count(); n < 2 {
			return fmt.Errorf("%d alert deliveries sent", n)
		}
		return nil
	})
}

// Signals: unknown tenant, product and location are rejected; a signal id applies once; applied
// signals reach the demand store.
func TestSignalsService(t *testing.T) {
	dir := t.TempDir()
	demand := embeddedDemand(t, dir)
	s := newServices(t, options{dir: dir, demand: demand})
	p := s.bootstrap(t)
	ctx := context.Background()
	seedStock(t, s, p)
	at := supplyplan.WeekStart(time.Now()).AddDate(0, 0, 1)
	sig := func(id, sku, loc string) supplyplan.DemandSignal {
		return supplyplan.DemandSignal{SignalID: id, OrganizationID: p.OrgID, SKU: sku, Location: loc, Channel: supplyplan.ChannelAll, Quantity: 3, OccurredAt: at}
	}
	if out, err := s.signals.ApplySignals(ctx, "org_nope", []supplyplan.DemandSignal{sig("x", "P", "DC")}); err != nil || out[0].Reason != supplyplan.RejectUnknownTenant {
		t.Fatalf("unknown tenant: %+v, %v", out, err)
	}
	out, err := s.signals.ApplySignals(ctx, p.OrgID, []supplyplan.DemandSignal{sig("a", "P", "DC"), sig("b", "Q", "DC"), sig("c", "P", "MOON"), sig("a", "P", "DC")})
	if err != nil {
		t.Fatal(err)
	}
	want := []supplyplan.SignalStatus{supplyplan.SignalApplied, supplyplan.SignalRejected, supplyplan.SignalRejected, supplyplan.SignalDuplicate}
	for i, o := range out {
		if o.Status != want[i] {
			t.Fatalf("outcomes %+v, want %v", out, want)
		}
	}
	if out, _ := s.signals.ApplySignals(ctx, p.OrgID, []supplyplan.DemandSignal{sig("a", "P", "DC")}); out[0].Status != supplyplan.SignalDuplicate {
		t.Fatalf("a replay: %+v", out)
	}
	weeks, err := s.catalog.DemandHistory(ctx, p, supplyplan.DemandKey{SKU: "P", Location: "DC", Channel: supplyplan.ChannelAll}, time.Time{}, time.Time{})
	if err != nil || len(weeks) != 1 || weeks[0].Actual != 3 {
		t.Fatalf("demand history %+v, %v; want the one signal's 3", weeks, err)
	}
}

// The MCP backends: merchant profiles, tool keys, and the audits of confirmed calls.
func TestMCPService(t *testing.T) {
	s := newServices(t, options{})
	p := s.bootstrap(t)
	ctx := context.Background()
	yes := true
	if _, err := s.mcp.SetMerchant(ctx, p.OrgID, supplyplan.MerchantInput{Listed: &yes, DisplayName: ptrTo("Demo shop")}); err != nil {
		t.Fatal(err)
	}
	if m, ok := s.mcp.MerchantProfile(p.OrgID); !ok || !m.Listed {
		t.Fatalf("profile = %+v, %v", m, ok)
	}
	if len(s.mcp.ListedMerchants()) != 1 {
		t.Fatalf("listed = %v", s.mcp.ListedMerchants())
	}
	k, secret, err := s.mcp.CreateToolKey(ctx, p.OrgID, supplyplan.KeyNameInput{Name: ptrTo("agent")})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.mcp.AuthenticateTool(secret); !ok || got.ID != k.ID {
		t.Fatalf("AuthenticateTool = %+v, %v", got, ok)
	}
	if err := s.mcp.RevokeToolKey(ctx, p.OrgID, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.mcp.AuthenticateTool(secret); ok {
		t.Fatal("a revoked tool key authenticates")
	}
	a := supplyplan.ToolAudit{ID: "aud_1", OrganizationID: p.OrgID, Tool: "create_transfer", Status: supplyplan.AuditConfirmed, CreatedAt: supplyplan.Now()}
	if err := s.mcp.ClaimToolConfirmation(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.mcp.ClaimToolConfirmation(ctx, a); supplyplan.ErrorCode(err) != supplyplan.ECONFLICT {
		t.Fatalf("a second claim: %v", err)
	}
	if err := s.mcp.CompleteToolAudit(ctx, p.OrgID, a.ID, supplyplan.AuditSucceeded, "ok"); err != nil {
		t.Fatal(err)
	}
	audits, err := s.mcp.ListToolAudits(ctx, p.OrgID)
	if err != nil || len(audits) != 1 || audits[0].Status != supplyplan.AuditSucceeded {
		t.Fatalf("audits = %+v, %v", audits, err)
	}
}

// A keyed request replays its stored outcome; a key in use answers 409; a key whose writes
// outlived their request (ask timed out) cannot be replayed.
func TestIdempotencyService(t *testing.T) {
	s := newServices(t, options{})
	p := s.bootstrap(t)
	ctx := context.Background()
	claim, stored, err := s.idempotency.BeginIdempotent(ctx, p.OrgID, "k1", "fp")
	if err != nil || stored != nil || claim == nil {
		t.Fatalf("begin = %v %v %v", claim, stored, err)
	}
	if _, _, err := s.idempotency.BeginIdempotent(ctx, p.OrgID, "k1", "fp"); supplyplan.ErrorCode(err) != supplyplan.EIDEMINFLIGHT {
		t.Fatalf("a key in flight: %v", err)
	}
	if _, err := s.forecasting.CreateScenario(supplyplan.WithIdempotency(ctx, claim), p, supplyplan.ScenarioInput{Name: ptrTo("keyed")}); err != nil {
		t.Fatal(err)
	}
	<-s.idempotency.FinishIdempotent(claim, supplyplan.IdempotentResponse{Status: 201, Body: `{"ok":true}`})
	_, stored, err = s.idempotency.BeginIdempotent(ctx, p.OrgID, "k1", "fp")
	if err != nil || stored == nil || stored.Status != 201 || stored.Body != `{"ok":true}` {
		t.Fatalf("replay = %+v, %v", stored, err)
	}
	if _, _, err := s.idempotency.BeginIdempotent(ctx, p.OrgID, "k1", "other"); supplyplan.ErrorCode(err) != supplyplan.EIDEMREUSED {
		t.Fatalf("the key with another request: %v", err)
	}
	if _, _, err := s.idempotency.BeginIdempotent(ctx, "org_nope", "k1", "fp"); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("an unknown scope: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.idempotency.BeginIdempotent(cancelled, p.OrgID, "k2", "fp"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a lookup whose request ended: %v", err)
	}
}

// Billing: events the platform does not handle are acknowledged and ignored once, then reported as
// duplicates; an unknown organization has no billing record.
func TestBillingService(t *testing.T) {
	s := newServices(t, options{})
	p := s.bootstrap(t)
	ctx := context.Background()
	ev := supplyplan.PaymentEvent{ID: "evt_1", Type: "customer.created", CustomerID: "cus_1", ObjectID: "cus_1"}
	res, err := s.billing.HandlePaymentEvent(ctx, ev)
	if err != nil || res.Status != "ignored" {
		t.Fatalf("first = %+v, %v", res, err)
	}
	if res, err := s.billing.HandlePaymentEvent(ctx, ev); err != nil || res.Status != "duplicate" {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	if _, err := s.billing.GetBilling(ctx, p.OrgID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.billing.GetBilling(ctx, "org_nope"); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("unknown organization: %v", err)
	}
}

// The catalog reads what imports wrote; a dry run writes nothing.
func TestCatalogAndImportsServices(t *testing.T) {
	s := newServices(t, options{})
	p := s.bootstrap(t)
	ctx := context.Background()
	raw, err := importjson.SplitBody(supplyplan.ImportCatalog, []byte(`{"products":[{"externalId":"DRY"}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := s.imports.DryRunImport(ctx, p, supplyplan.ImportCatalog, raw); err != nil || !j.DryRun || j.AppliedCount != 1 {
		t.Fatalf("dry run = %+v, %v", j, err)
	}
	if _, err := s.catalog.GetProduct(ctx, p, "DRY"); supplyplan.ErrorCode(err) != supplyplan.ENOTFOUND {
		t.Fatalf("a dry run wrote: %v", err)
	}
	seedStock(t, s, p)
	prods, err := s.catalog.ListProducts(ctx, p, supplyplan.ProductFilter{})
	if err != nil || prods.Total != 1 {
		t.Fatalf("products = %+v, %v", prods, err)
	}
	avail, err := s.catalog.Availability(ctx, p, "P", nil)
	if err != nil || len(avail) != 2 {
		t.Fatalf("availability = %+v, %v", avail, err)
	}
	jobs, err := s.imports.ListImportJobs(ctx, p)
	if err != nil || len(jobs) != 2 || jobs[0].CreatedAt.Before(jobs[1].CreatedAt) {
		t.Fatalf("jobs = %+v, %v; want two, newest first", jobs, err)
	}
	if _, err := s.catalog.DemandHistory(ctx, p, supplyplan.DemandKey{SKU: "NOPE", Location: "DC"}, time.Time{}, time.Time{}); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
		t.Fatalf("an unknown product's history: %v", err)
	}
}
