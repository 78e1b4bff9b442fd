package supplyplan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The loop runtime's state machine, without an actor: every transition rule, If-Match,
// Idempotency-Keys, lifecycle actions, timers (as durable data), bulk cancel and the hash chain.

func procurementDef(tb testing.TB) LoopDefinition {
	tb.Helper()
	loops, err := BuiltinLoops()
	if err != nil {
		tb.Fatal(err)
	}
	for _, b := range loops {
		if b.Name == BuiltinProcurementLoop {
			c, err := CanonicalJSON(b.Manifest)
			if err != nil {
				tb.Fatal(err)
			}
			return LoopDefinition{Digest: LoopDigest(c), Name: b.Name, Version: b.Version, Manifest: c}
		}
	}
	tb.Fatal("no built-in procurement loop")
	return LoopDefinition{}
}

// runState applies recs to st, as the actor does, failing the test on an error.
func runApply(tb testing.TB, st *LoopRunState, recs []Record) {
	tb.Helper()
	// Through the journal encoding, as a replay would see them.
	b, err := EncodeRecords(recs)
	if err != nil {
		tb.Fatal(err)
	}
	dec, err := DecodeRecords(b)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range dec {
		if err := st.Apply(r); err != nil {
			tb.Fatal(err)
		}
	}
}

var (
	rt0      = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	planner  = LoopRequestMeta{Actor: LoopActor{Type: LoopActorUser, Sub: "alice", Iss: "test", Jti: "j1"}, RequestID: "req-1"}
	admin    = LoopRolesOf(true, true)
	plannerR = LoopRolesOf(false, true)
)

func mustStart(tb testing.TB, st *LoopRunState, key string, now time.Time) LoopInstance {
	tb.Helper()
	in := LoopStartInput{Loop: BuiltinProcurementLoop, BusinessKey: key}
	if err := in.Validate(); err != nil {
		tb.Fatal(err)
	}
	res, recs, err := st.Start(LoopStart{Input: in, Definition: procurementDef(tb)}, planner, now)
	if err != nil {
		tb.Fatal(err)
	}
	runApply(tb, st, recs)
	return res.Instance
}

func mustFire(tb testing.TB, st *LoopRunState, id, name, payload string, roles []string, now time.Time) LoopInstance {
	tb.Helper()
	res, recs, err := st.Transition(id, LoopTransitionInput{Name: name, Payload: json.RawMessage(payload), Roles: roles}, planner, PlanLoopEffects, now)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	runApply(tb, st, recs)
	return res.Instance
}

func wantRunCode(tb testing.TB, err error, code string) *Error {
	tb.Helper()
	if ErrorCode(err) != code {
		tb.Fatalf("err = %v, want %s", err, code)
	}
	e, _ := err.(*Error)
	return e
}

func TestLoopStartBindsDigestAndRefusesSecondOpenInstance(t *testing.T) {
	st := NewLoopRunState("org_1")
	in := mustStart(t, st, "PO-1", rt0)
	def := procurementDef(t)
	if in.Status != LoopRunning || in.State != "draft" || in.Version != 1 || in.DefinitionDigest != def.Digest || in.LoopVersion != "1.0.0" {
		t.Fatalf("started %+v", in)
	}
	start := LoopStartInput{Loop: BuiltinProcurementLoop, BusinessKey: "PO-1"}
	_ = start.Validate()
	_, _, err := st.Start(LoopStart{Input: start, Definition: def}, planner, rt0)
	wantRunCode(t, err, EINSTANCEEXISTS)
	start.OnConflict = LoopOnConflictUseExisting
	res, recs, err := st.Start(LoopStart{Input: start, Definition: def}, planner, rt0)
	if err != nil || res.Created || res.Instance.ID != in.ID || len(recs) != 0 {
		t.Fatalf("USE_EXISTING = %+v %d records %v", res, len(recs), err)
	}
	// Once closed, the business key may start a new instance.
	mustTerminate(t, st, in.ID)
	other := mustStart(t, st, "PO-1", rt0)
	if other.ID == in.ID {
		t.Fatal("a closed instance was reused")
	}
	for _, bad := range []LoopStartInput{{BusinessKey: "x"}, {Loop: BuiltinProcurementLoop}, {Loop: BuiltinProcurementLoop, BusinessKey: "x", OnConflict: "TERMINATE"},
		{Loop: BuiltinProcurementLoop, BusinessKey: "x", Version: "1.0.0", Range: "^1"}, {Loop: BuiltinProcurementLoop, BusinessKey: "x", Input: json.RawMessage(`[1]`)}} {
		if err := bad.Validate(); ErrorCode(err) != EVALIDATION {
			t.Errorf("Validate(%+v) = %v", bad, err)
		}
	}
}

func mustTerminate(tb testing.TB, st *LoopRunState, id string) LoopInstance {
	tb.Helper()
	res, recs, err := st.Lifecycle(id, LoopActionTerminate, LoopLifecycleInput{Reason: "test"}, planner, PlanLoopEffects, rt0)
	if err != nil {
		tb.Fatal(err)
	}
	runApply(tb, st, recs)
	return res.Instance
}

func TestLoopTransitionRules(t *testing.T) {
	st := NewLoopRunState("org_1")
	in := mustStart(t, st, "PO-2", rt0)
	stale := int64(7)
	cases := []struct {
		name    string
		tr      LoopTransitionInput
		code    string
		details string
	}{
		{"unknown transition", LoopTransitionInput{Name: "teleport", Roles: admin}, ECONFLICT, "allowed from draft: submit, withdraw"},
		{"not from this state", LoopTransitionInput{Name: "approve", Roles: admin}, ECONFLICT, "allowed from draft: submit, withdraw"},
		{"stale If-Match", LoopTransitionInput{Name: "submit", Roles: admin, IfMatch: &stale}, EPRECONDITION, "instance is at version 1, not 7"},
		{"viewer", LoopTransitionInput{Name: "submit", Roles: LoopRolesOf(false, false)}, EFORBIDDEN, ""},
		{"payload schema", LoopTransitionInput{Name: "submit", Roles: admin, Payload: json.RawMessage(`{"note": 5}`)}, EVALIDATION, "payload.note"},
		{"unknown member", LoopTransitionInput{Name: "submit", Roles: admin, Payload: json.RawMessage(`{"nope": 1}`)}, EVALIDATION, "payload.nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, recs, err := st.Transition(in.ID, c.tr, planner, PlanLoopEffects, rt0)
			e := wantRunCode(t, err, c.code)
			if len(recs) != 0 {
				t.Fatal("a refused transition wrote records")
			}
			if c.details != "" && !strings.Contains(e.Error(), c.details) {
				t.Fatalf("error %v does not name %q", e, c.details)
			}
		})
	}
	// The right version, role and payload fire; the transition's role set is honoured (approve
	// needs MANAGER or ADMIN: loops:write alone is refused).
	v := int64(1)
	res, recs, err := st.Transition(in.ID, LoopTransitionInput{Name: "submit", Roles: plannerR, IfMatch: &v, Payload: json.RawMessage(`{"note":"go"}`)}, planner, PlanLoopEffects, rt0)
	if err != nil {
		t.Fatal(err)
	}
	runApply(t, st, recs)
	if res.Instance.State != "submitted" || res.Instance.Version != 2 || res.Instance.TimerTransition != "expire" ||
		!res.Instance.TimerDueAt.Equal(rt0.Add(7*24*time.Hour)) {
		t.Fatalf("after submit %+v", res.Instance)
	}
	_, _, err = st.Transition(in.ID, LoopTransitionInput{Name: "approve", Roles: plannerR}, planner, PlanLoopEffects, rt0)
	wantRunCode(t, err, EFORBIDDEN)
	// A SYSTEM-only transition is never fired through the API.
	_, _, err = st.Transition(in.ID, LoopTransitionInput{Name: "expire", Roles: admin}, planner, PlanLoopEffects, rt0)
	wantRunCode(t, err, EFORBIDDEN)
	mustFire(t, st, in.ID, "approve", `{}`, admin, rt0)
	mustFire(t, st, in.ID, "place_order", `{"supplierId":"sup-1"}`, admin, rt0)
	// A receipt needs a location: the instance has no destination.
	_, _, err = st.Transition(in.ID, LoopTransitionInput{Name: "receive", Roles: admin, Payload: json.RawMessage(`{"lines":[{"sku":"A","quantity":3}]}`)}, planner, PlanLoopEffects, rt0)
	if e := wantRunCode(t, err, EVALIDATION); e.Details["payload.lines[0].locationId"] == nil {
		t.Fatalf("details %v", e.Details)
	}
	done := mustFire(t, st, in.ID, "receive", `{"lines":[{"sku":"A","locationId":"L1","quantity":3}]}`, admin, rt0)
	if done.Status != LoopCompleted || done.State != "received" || done.ClosedAt == nil || done.TimerDueAt != nil {
		t.Fatalf("after receive %+v", done)
	}
	if len(done.Effects) != 1 || done.Effects[0].Status != LoopEffectPending || done.Effects[0].Lines[0].Quantity != 3 {
		t.Fatalf("effects %+v", done.Effects)
	}
	// A completed instance takes nothing more.
	_, _, err = st.Transition(in.ID, LoopTransitionInput{Name: "receive", Roles: admin}, planner, PlanLoopEffects, rt0)
	wantRunCode(t, err, ECONFLICT)
	_, _, err = st.Lifecycle(in.ID, LoopActionCancel, LoopLifecycleInput{Reason: "late"}, planner, PlanLoopEffects, rt0)
	wantRunCode(t, err, ECONFLICT)
	if v := mustVerify(t, st, in.ID); v.Events != 5 {
		t.Fatalf("verification %+v", v)
	}
}

func mustVerify(tb testing.TB, st *LoopRunState, id string) LoopAuditVerification {
	tb.Helper()
	v, err := st.VerifyAudit(id)
	if err != nil || !v.Valid {
		tb.Fatalf("verify = %+v, %v", v, err)
	}
	return v
}

func TestLoopIdempotencyKeys(t *testing.T) {
	st := NewLoopRunState("org_1")
	in := mustStart(t, st, "PO-3", rt0)
	meta := planner
	meta.IdempotencyKey, meta.Fingerprint = "k1", "fp-a"
	tr := LoopTransitionInput{Name: "submit", Roles: admin}
	res, recs, err := st.Transition(in.ID, tr, meta, PlanLoopEffects, rt0)
	if err != nil {
		t.Fatal(err)
	}
	runApply(t, st, recs)
	// The same key and request: the stored response, nothing applied again.
	again, recs, err := st.Transition(in.ID, tr, meta, PlanLoopEffects, rt0.Add(time.Hour))
	if err != nil || again.Replay == nil || len(recs) != 0 || again.Replay.Status != 200 {
		t.Fatalf("replay = %+v, %d records, %v", again, len(recs), err)
	}
	var body LoopInstance
	if err := json.Unmarshal(again.Replay.Body, &body); err != nil || body.Version != res.Instance.Version || body.State != "submitted" {
		t.Fatalf("replayed body %s (%v)", again.Replay.Body, err)
	}
	// The same key with another request is 422.
	meta.Fingerprint = "fp-b"
	_, _, err = st.Transition(in.ID, tr, meta, PlanLoopEffects, rt0)
	wantRunCode(t, err, EIDEMREUSED)
	// Keys expire after a day and are pruned.
	if recs := st.PruneIdem(rt0.Add(LoopIdemTTL)); len(recs) != 1 {
		t.Fatalf("prune = %v", recs)
	}
	if evs, _ := st.EventsAfter(in.ID, 0, 10); evs[1].IdempotencyKey != "k1" || evs[1].RequestID != "req-1" || evs[1].Actor.Sub != "alice" {
		t.Fatalf("event %+v", evs[1])
	}
}

func TestLoopLifecycle(t *testing.T) {
	st := NewLoopRunState("org_1")
	in := mustStart(t, st, "PO-4", rt0)
	mustFire(t, st, in.ID, "submit", `{}`, admin, rt0)
	// Suspend pauses the timer (7 days): resumed after 3 days, it is due 7 days after the resume
	// minus the day it ran.
	lc := func(action, reason string, at time.Time) (LoopInstance, error) {
		res, recs, err := st.Lifecycle(in.ID, action, LoopLifecycleInput{Reason: reason}, planner, PlanLoopEffects, at)
		if err == nil {
			runApply(t, st, recs)
		}
		return res.Instance, err
	}
	s, err := lc(LoopActionSuspend, "", rt0.Add(24*time.Hour))
	if err != nil || s.Status != LoopSuspended || s.TimerDueAt != nil || s.TimerRemainingMs != (6*24*time.Hour).Milliseconds() {
		t.Fatalf("suspend = %+v %v", s, err)
	}
	if _, _, err := st.Transition(in.ID, LoopTransitionInput{Name: "approve", Roles: admin}, planner, PlanLoopEffects, rt0); ErrorCode(err) != ECONFLICT {
		t.Fatalf("transition of a suspended instance = %v", err)
	}
	if ids := st.DueTimers(rt0.Add(30*24*time.Hour), 10); len(ids) != 0 {
		t.Fatalf("a suspended instance's timer fired: %v", ids)
	}
	if _, err := lc(LoopActionSuspend, "", rt0); ErrorCode(err) != ECONFLICT {
		t.Fatalf("suspend twice = %v", err)
	}
	r, err := lc(LoopActionResume, "", rt0.Add(4*24*time.Hour))
	if err != nil || r.Status != LoopRunning || !r.TimerDueAt.Equal(rt0.Add(10*24*time.Hour)) {
		t.Fatalf("resume = %+v %v", r, err)
	}
	if _, err := lc(LoopActionCancel, "", rt0); ErrorCode(err) != EVALIDATION {
		t.Fatalf("cancel without a reason = %v", err)
	}
	// Graceful cancel from submitted: the loop has no cancel transition from there, so only the
	// status changes.
	c, err := lc(LoopActionCancel, "supplier went bust", rt0.Add(5*24*time.Hour))
	if err != nil || c.Status != LoopCanceled || c.State != "submitted" || c.CloseReason != "supplier went bust" || c.TimerDueAt != nil {
		t.Fatalf("cancel = %+v %v", c, err)
	}
	if _, err := lc(LoopActionTerminate, "again", rt0); ErrorCode(err) != ECONFLICT {
		t.Fatalf("terminate a canceled instance = %v", err)
	}
	evs, _ := st.EventsAfter(in.ID, 0, 100)
	types := []string{}
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if want := []string{"started", "transition", "suspended", "resumed", "canceled"}; !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	if evs[4].Reason != "supplier went bust" || evs[4].Actor.Sub != "alice" {
		t.Fatalf("cancel event %+v", evs[4])
	}
	mustVerify(t, st, in.ID)

	// Graceful cancel runs the loop's own cancel transition when it may leave the state.
	in2 := mustStart(t, st, "PO-5", rt0)
	in2.Subject = nil
	mustFire(t, st, in2.ID, "submit", `{}`, admin, rt0)
	mustFire(t, st, in2.ID, "approve", `{}`, admin, rt0)
	res, recs, err := st.Lifecycle(in2.ID, LoopActionCancel, LoopLifecycleInput{Reason: "not needed"}, planner, PlanLoopEffects, rt0)
	if err != nil {
		t.Fatal(err)
	}
	runApply(t, st, recs)
	if res.Instance.State != "cancelled" || res.Instance.Status != LoopCanceled || len(res.Events) != 2 ||
		res.Events[0].Type != "loop.procurement.cancel" || res.Events[1].Type != "loop.procurement.canceled" {
		t.Fatalf("graceful cancel %+v events %v", res.Instance, res.Events)
	}
	// Terminate is forced: the state stays.
	in3 := mustStart(t, st, "PO-6", rt0)
	mustFire(t, st, in3.ID, "submit", `{}`, admin, rt0)
	if x := mustTerminate(t, st, in3.ID); x.Status != LoopTerminated || x.State != "submitted" {
		t.Fatalf("terminate %+v", x)
	}
}

func TestLoopTimeoutsFireFromDurableDueTimes(t *testing.T) {
	st := NewLoopRunState("org_1")
	in := mustStart(t, st, "PO-7", rt0)
	mustFire(t, st, in.ID, "submit", `{}`, admin, rt0)
	// Rebuild the state from a snapshot, as after a restart: the due time is data.
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	st2 := NewLoopRunState("org_1")
	if err := json.Unmarshal(b, st2); err != nil {
		t.Fatal(err)
	}
	if ids := st2.DueTimers(rt0.Add(7*24*time.Hour-time.Second), 10); len(ids) != 0 {
		t.Fatalf("fired early: %v", ids)
	}
	ids := st2.DueTimers(rt0.Add(7*24*time.Hour), 10)
	if !slices.Equal(ids, []string{in.ID}) {
		t.Fatalf("due = %v", ids)
	}
	res, recs, err := st2.FireTimeouts(ids, PlanLoopEffects, rt0.Add(7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	runApply(t, st2, recs)
	got, _ := st2.Instance(in.ID)
	if got.Status != LoopTimedOut || got.State != "cancelled" || len(res.Events) != 1 || res.Events[0].Type != "loop.procurement.expire" {
		t.Fatalf("after timeout %+v %v", got, res.Events)
	}
	evs, _ := st2.EventsAfter(in.ID, 2, 10)
	if evs[0].Actor.Type != LoopActorSystem || evs[0].Type != LoopEventTimeout || !strings.Contains(evs[0].Reason, "P7D") {
		t.Fatalf("timeout event %+v", evs[0])
	}
	if ids := st2.DueTimers(rt0.Add(100*24*time.Hour), 10); len(ids) != 0 {
		t.Fatalf("fired twice: %v", ids)
	}
	mustVerify(t, st2, in.ID)
}

func TestLoopBulkCancel(t *testing.T) {
	st := NewLoopRunState("org_1")
	var ids []string
	for i := range 5 {
		in := mustStart(t, st, "BK-"+string(rune('a'+i)), rt0.Add(time.Duration(i)*time.Minute))
		ids = append(ids, in.ID)
	}
	mustTerminate(t, st, ids[0])
	in := LoopBulkCancelInput{Filter: LoopInstanceFilter{Loop: BuiltinProcurementLoop}, Reason: "cleanup", DryRun: true}
	r, _, recs, err := st.BulkCancel(in, planner, PlanLoopEffects, rt0)
	if err != nil || r.Count != 4 || r.Canceled != 0 || len(recs) != 0 {
		t.Fatalf("dry run = %+v %v", r, err)
	}
	// An empty filter is never "everything".
	if _, _, _, err := st.BulkCancel(LoopBulkCancelInput{Reason: "x"}, planner, PlanLoopEffects, rt0); ErrorCode(err) != EVALIDATION {
		t.Fatalf("empty filter = %v", err)
	}
	// The expected count must still hold.
	three := 3
	in.DryRun, in.ExpectedCount = false, &three
	if _, _, _, err := st.BulkCancel(in, planner, PlanLoopEffects, rt0); ErrorCode(err) != ECOUNTCHANGED {
		t.Fatalf("changed count = %v", err)
	}
	four := 4
	in.ExpectedCount = &four
	r, res, recs, err := st.BulkCancel(in, planner, PlanLoopEffects, rt0)
	if err != nil || r.Canceled != 4 {
		t.Fatalf("bulk cancel = %+v %v", r, err)
	}
	runApply(t, st, recs)
	if len(res.Events) != 4 {
		t.Fatalf("events %d", len(res.Events))
	}
	if p := st.List(LoopInstanceFilter{Status: LoopCanceled, Limit: 10}); p.Total != 4 {
		t.Fatalf("canceled = %d", p.Total)
	}
	if p := st.List(LoopInstanceFilter{State: "draft", BusinessKey: "BK-a", Limit: 10}); p.Total != 1 || p.Items[0].ID != ids[0] {
		t.Fatalf("by key = %+v", p)
	}
	after := rt0.Add(2 * time.Minute)
	if p := st.List(LoopInstanceFilter{CreatedAfter: &after, Limit: 2}); p.Total != 3 || len(p.Items) != 2 || p.Items[0].ID != ids[4] {
		t.Fatalf("created after = %+v", p)
	}
}

func TestLoopAuditChainDetectsTampering(t *testing.T) {
	st := NewLoopRunState("org_1")
	in := mustStart(t, st, "PO-8", rt0)
	mustFire(t, st, in.ID, "submit", `{"note":"a"}`, admin, rt0)
	mustFire(t, st, in.ID, "approve", `{}`, admin, rt0)
	evs, _ := st.EventsAfter(in.ID, 0, 10)
	cur, _ := st.Instance(in.ID)
	if v := VerifyLoopEvents(in.ID, evs, cur.LastHash); !v.Valid || v.Events != 3 || v.LastHash != cur.LastHash {
		t.Fatalf("verify %+v", v)
	}
	// The recipe of the docs: sha256 of the canonical event without hash and prevHash, then prevHash.
	c, err := evs[1].canonical()
	if err != nil || strings.Contains(string(c), `"hash"`) || strings.Contains(string(c), `"prevHash"`) {
		t.Fatalf("canonical %s %v", c, err)
	}
	tampered := slices.Clone(evs)
	tampered[1].Payload = json.RawMessage(`{"note":"b"}`)
	if v := VerifyLoopEvents(in.ID, tampered, cur.LastHash); v.Valid || v.FirstInvalidSeq != 2 {
		t.Fatalf("tampered payload verified: %+v", v)
	}
	if v := VerifyLoopEvents(in.ID, evs[:2], cur.LastHash); v.Valid {
		t.Fatalf("a missing tail verified: %+v", v)
	}
	if v := VerifyLoopEvents(in.ID, []LoopEvent{evs[0], evs[2]}, cur.LastHash); v.Valid || v.FirstInvalidSeq != 2 {
		t.Fatalf("a gap verified: %+v", v)
	}
}

func TestLoopProcurementEffectOnTenant(t *testing.T) {
	ts := NewTenantState("org_1")
	now := rt0
	must := func(recs []Record) {
		for _, r := range recs {
			if err := ts.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	must([]Record{Put(KindProduct, "p1", &Product{ID: "p1", ExternalID: "p1", Name: "Widget", SKU: "W-1"}),
		Put(KindLocation, "wh1", &Location{ID: "wh1", Name: "Main"}),
		Put(KindPurchaseOrder, "PO-9", &PurchaseOrder{ExternalPoNumber: "PO-9", SupplierID: "s1", DestinationLocationID: "wh1", Status: "CONFIRMED",
			Lines: []POLine{{SKU: "p1", Quantity: 10}}})})
	sub, err := ts.LoopSubjectOf(BuiltinProcurementLoop, json.RawMessage(`{"purchaseOrderId":"PO-9"}`))
	if err != nil || sub == nil || sub.DestinationLocationID != "wh1" || sub.Kind != LoopSubjectPurchaseOrder {
		t.Fatalf("subject %+v %v", sub, err)
	}
	if _, err := ts.LoopSubjectOf(BuiltinProcurementLoop, json.RawMessage(`{"purchaseOrderId":"nope"}`)); ErrorCode(err) != EVALIDATION {
		t.Fatalf("unknown PO = %v", err)
	}
	inst := &LoopInstance{ID: "lin_1", Loop: BuiltinProcurementLoop, Subject: sub}
	eff, err := PlanLoopEffects(inst, "receive_partial", json.RawMessage(`{"lines":[{"sku":"W-1","quantity":4,"lotId":"L-1","expiresAt":"2027-01-01"}]}`), 5)
	if err != nil || eff == nil || eff.Lines[0].LocationID != "wh1" {
		t.Fatalf("plan %+v %v", eff, err)
	}
	recs, applied, err := ts.ApplyLoopEffect(*eff, now)
	if err != nil || !applied {
		t.Fatal(err)
	}
	must(recs)
	lv := ts.Inventory[InventoryKey("p1", "wh1")]
	if lv.QuantityOnHand != 4 || len(lv.Lots) != 1 || lv.Lots[0].Quantity != 4 {
		t.Fatalf("level %+v", lv)
	}
	if po := ts.PurchaseOrders["PO-9"]; po.Lines[0].Quantity != 6 || po.Status != "CONFIRMED" {
		t.Fatalf("po %+v", po)
	}
	// Applied once: a retry changes nothing.
	if recs, applied, err := ts.ApplyLoopEffect(*eff, now); err != nil || applied || len(recs) != 0 {
		t.Fatalf("second apply = %v %v %v", recs, applied, err)
	}
	eff2, _ := PlanLoopEffects(inst, "receive", json.RawMessage(`{"lines":[{"sku":"W-1","quantity":6}]}`), 6)
	recs, _, err = ts.ApplyLoopEffect(*eff2, now)
	if err != nil {
		t.Fatal(err)
	}
	must(recs)
	if lv := ts.Inventory[InventoryKey("p1", "wh1")]; lv.QuantityOnHand != 10 {
		t.Fatalf("on hand %v", lv.QuantityOnHand)
	}
	if po := ts.PurchaseOrders["PO-9"]; po.Status != "RECEIVED" || po.Lines[0].Quantity != 0 {
		t.Fatalf("po %+v", po)
	}
	bad := LoopTenantEffect{ID: "x", Lines: []LoopStockLine{{SKU: "nope", LocationID: "wh9", Quantity: 1}}}
	if _, _, err := ts.ApplyLoopEffect(bad, now); ErrorCode(err) != EVALIDATION {
		t.Fatalf("unknown sku = %v", err)
	}
	// Other loops have no effects.
	if e, err := PlanLoopEffects(&LoopInstance{Loop: "acme/x"}, "receive", nil, 1); e != nil || err != nil {
		t.Fatalf("custom loop effect %v %v", e, err)
	}
}

// TestLoopEventCanonicalFastPath: the event's canonical bytes written directly are those of the
// generic RFC 8785 canonicalizer, for events with and without optional members, escapes, non-ASCII
// text and payloads.
func TestLoopEventCanonicalFastPath(t *testing.T) {
	base := LoopEvent{Seq: 12, InstanceID: "lin_1", Type: LoopEventTransition, From: "a", To: "b", Transition: "go", Status: LoopRunning,
		Actor: LoopActor{Type: "user", Sub: "alice", Iss: "https://issuer.example", Jti: "j-1"}, Reason: "why \"not\" <b>&\u2028\n\t\x01é😀",
		RequestID: "req", IdempotencyKey: "k", DefinitionDigest: "sha256:ab", OccurredAt: rt0.Add(123456789 * time.Nanosecond),
		Payload: json.RawMessage(`{"a":[1.5,"x"],"b":"<i>"}`), PrevHash: "p", Hash: "h"}
	// As the journal's encoder stores a payload: HTML characters escaped.
	stored := base
	stored.Payload = json.RawMessage(`{"a":[1.5,"x"],"b":"\u003ci\u003e"}`)
	cases := []LoopEvent{base, stored, {Seq: 1, InstanceID: "x", Type: "started", Status: LoopRunning, Actor: SystemLoopActor, OccurredAt: rt0},
		{Seq: 2, Payload: json.RawMessage(`{}`), Actor: LoopActor{Sub: "<&>"}, OccurredAt: rt0.In(time.FixedZone("x", 3600))}}
	for i, e := range cases {
		fast, err := e.canonical()
		if err != nil {
			t.Fatal(err)
		}
		slow, err := e.canonicalSlow()
		if err != nil {
			t.Fatal(err)
		}
		if string(fast) != string(slow) {
			t.Errorf("case %d:\nfast %s\nslow %s", i, fast, slow)
		}
	}
}

// TestLoopCommitmentThresholdsOncePerMonth: with a commitment of 10 transitions a month, the 8th
// and the 10th transition each write one threshold event; further transitions none; a new month
// counts from zero.
func TestLoopCommitmentThresholdsOncePerMonth(t *testing.T) {
	st := NewLoopRunState("org_1")
	st.SetCommitment(10)
	in := mustStart(t, st, "Q-1", rt0)
	var got []int
	now := rt0
	fire := func(at time.Time, n int) {
		for i := 0; i < n; i++ {
			cur, _ := st.Instance(in.ID)
			name := "submit"
			if cur.State == "submitted" {
				name = "reject"
			}
			payload := `{}`
			if name == "reject" {
				payload = `{"reason":"again"}`
			}
			res, recs, err := st.Transition(in.ID, LoopTransitionInput{Name: name, Payload: json.RawMessage(payload), Roles: admin}, planner, PlanLoopEffects, at)
			if err != nil {
				t.Fatal(err)
			}
			runApply(t, st, recs)
			for _, e := range res.Events {
				if e.Type == EventLoopCommitmentThreshold {
					got = append(got, e.Data.(LoopCommitmentEvent).ThresholdPct)
				}
			}
		}
	}
	fire(now, 7)
	if len(got) != 0 {
		t.Fatalf("events after 7: %v", got)
	}
	fire(now, 1)
	fire(now, 1)
	fire(now, 1)
	fire(now, 5)
	if !slices.Equal(got, []int{80, 100}) {
		t.Fatalf("events %v, want [80 100]", got)
	}
	if v := st.UsageView(now, 10); v.Transitions != 15 || !slices.Equal(v.Reached, []int{80, 100}) || v.Period != "2026-11" {
		t.Fatalf("usage %+v", v)
	}
	// The next month counts again.
	next := rt0.AddDate(0, 1, 0)
	fire(next, 8)
	if !slices.Equal(got, []int{80, 100, 80}) {
		t.Fatalf("events %v", got)
	}
	// Without a commitment nothing fires.
	st.SetCommitment(0)
	fire(next, 5)
	if len(got) != 3 {
		t.Fatalf("events without a commitment %v", got)
	}
}

// TestLoopEffectRetryNamesItsPayload: a pending effect retried at the next start (LoopEffect.Tenant)
// reports its problems under the same payload path as the first attempt: payload.restock for the
// returns loop's restock, payload.lines for a procurement receipt.
func TestLoopEffectRetryNamesItsPayload(t *testing.T) {
	ts := NewTenantState("org_1")
	if err := ts.Apply(Put(KindLocation, "wh1", &Location{ID: "wh1", Name: "Main"})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		inst       *LoopInstance
		transition string
		payload    string
		field      string
	}{
		{&LoopInstance{ID: "lin_r", Loop: BuiltinReturnsLoop}, "resolve", `{"restock":[{"sku":"nope","locationId":"wh1","quantity":1}]}`, "payload.restock[0].sku"},
		{&LoopInstance{ID: "lin_p", Loop: BuiltinProcurementLoop}, "receive_partial", `{"lines":[{"sku":"nope","locationId":"wh1","quantity":1}]}`, "payload.lines[0].sku"},
	} {
		eff, err := PlanLoopEffects(tc.inst, tc.transition, json.RawMessage(tc.payload), 3)
		if err != nil || eff == nil {
			t.Fatalf("%s: plan %+v %v", tc.inst.Loop, eff, err)
		}
		// As the runtime records it on the instance, then retries it.
		recorded := LoopEffect{Seq: 3, ID: eff.ID, Kind: eff.Kind(), Status: LoopEffectPending, Lines: eff.Lines,
			PurchaseOrderID: eff.PurchaseOrderID, PurchaseOrderStatus: eff.PurchaseOrderStatus, OrderID: eff.OrderID}
		for name, e := range map[string]LoopTenantEffect{"first attempt": *eff, "retry": recorded.Tenant(tc.inst)} {
			_, _, err := ts.ApplyLoopEffect(e, rt0)
			var de *Error
			if !errors.As(err, &de) || de.Code != EVALIDATION || len(de.Details) != 1 || len(de.Details[tc.field]) != 1 {
				t.Errorf("%s %s: got %v (%+v), want a validation error naming %s", tc.inst.Loop, name, err, de, tc.field)
			}
		}
	}
}

// TestLoopReceiptDropsUsedLots: a receipt first drops the lots that picks and shipments used up
// (first expired first out), so a level's stored lots follow its stock instead of growing by one
// per receipt.
func TestLoopReceiptDropsUsedLots(t *testing.T) {
	ts := NewTenantState("org_1")
	must := func(recs []Record) {
		for _, r := range recs {
			if err := ts.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	must([]Record{Put(KindProduct, "p1", &Product{ID: "p1", ExternalID: "p1", Name: "Widget", SKU: "W-1"}),
		Put(KindLocation, "wh1", &Location{ID: "wh1", Name: "Main"})})
	inst := &LoopInstance{ID: "lin_1", Loop: BuiltinProcurementLoop, Subject: &LoopSubject{Kind: LoopSubjectPurchaseOrder, DestinationLocationID: "wh1"}}
	receive := func(seq int64, lot, expires string, qty int) {
		t.Helper()
		eff, err := PlanLoopEffects(inst, "receive_partial", json.RawMessage(fmt.Sprintf(`{"lines":[{"sku":"W-1","quantity":%d,"lotId":%q,"expiresAt":%q}]}`, qty, lot, expires)), seq)
		if err != nil || eff == nil {
			t.Fatalf("plan %+v %v", eff, err)
		}
		recs, _, err := ts.ApplyLoopEffect(*eff, rt0)
		if err != nil {
			t.Fatal(err)
		}
		must(recs)
	}
	ship := func(qty float64) { // what a shipment does to the level: stock out, lots not named
		lv := *ts.Inventory[InventoryKey("p1", "wh1")]
		lv.QuantityOnHand -= qty
		must([]Record{Put(KindInventory, InventoryKey("p1", "wh1"), &lv)})
	}
	for i := range 50 {
		receive(int64(i+1), fmt.Sprint("LOT-", i), rt0.AddDate(0, 0, 30+i).Format("2006-01-02"), 10)
		ship(10)
	}
	receive(51, "LOT-LAST", rt0.AddDate(0, 0, 90).Format("2006-01-02"), 10)
	lv := ts.Inventory[InventoryKey("p1", "wh1")]
	if lv.QuantityOnHand != 10 || len(lv.Lots) != 1 || lv.Lots[0].LotID != "LOT-LAST" || lv.Lots[0].Quantity != 10 {
		t.Fatalf("after 50 receipts shipped out and one more: on hand %v, lots %+v", lv.QuantityOnHand, lv.Lots)
	}
}

// TestPurgeClosedKeepsPendingEffects: a closed instance with an effect still PENDING stays past the
// retention (the runtime sends that effect again at its next start); the others go oldest first,
// at most max, and ForgetInstances drops exactly the purged instances' applied-effect ids.
func TestPurgeClosedKeepsPendingEffects(t *testing.T) {
	now := rt0.Add(100 * 24 * time.Hour)
	st := NewLoopRunState("org_1")
	closed := func(id string, daysAgo int, effects ...LoopEffect) *LoopInstance {
		at := now.Add(-time.Duration(daysAgo) * 24 * time.Hour)
		return &LoopInstance{ID: id, Loop: "l", BusinessKey: id, Status: LoopCompleted, ClosedAt: &at, Effects: effects}
	}
	for _, in := range []*LoopInstance{
		closed("lin_a", 40), closed("lin_b", 50), closed("lin_c", 35),
		closed("lin_pending", 60, LoopEffect{Seq: 2, ID: "lin_pending#2", Status: LoopEffectPending}),
		closed("lin_recent", 5),
		{ID: "lin_open", Loop: "l", BusinessKey: "open", Status: LoopRunning},
	} {
		if err := st.Apply(Put(KindLoopInstance, in.ID, in)); err != nil {
			t.Fatal(err)
		}
	}
	recs := st.PurgeClosed(now, DefaultLoopRetention, 2)
	var ids []string
	for _, r := range recs {
		if !r.Del {
			t.Fatalf("not a deletion: %+v", r)
		}
		if r.Kind == KindLoopInstance {
			ids = append(ids, r.ID)
		}
	}
	if !slices.Equal(ids, []string{"lin_b", "lin_a"}) {
		t.Fatalf("purged %v, want the two oldest closed without a pending effect [lin_b lin_a]", ids)
	}
	var fx LoopEffectsState
	for _, id := range []string{"lin_b#3", "lin_a#2", "lin_c#2", "lin_bb#1"} {
		if err := fx.Apply(Put(KindLoopEffectApplied, id, &LoopEffectRecord{ID: id})); err != nil {
			t.Fatal(err)
		}
	}
	var forgot []string
	for _, r := range fx.ForgetInstances(map[string]bool{"lin_a": true, "lin_b": true}) {
		forgot = append(forgot, r.ID)
	}
	if !slices.Equal(forgot, []string{"lin_a#2", "lin_b#3"}) {
		t.Fatalf("forgot %v", forgot)
	}
}
