package supplyplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestEncodeRecordsSameBytes: the hand-written encodings write exactly what encoding/json writes,
// on random values with the cases that differ (escaping, exponents, nil slices and times, omitted
// fields, years out of range, data of other types), alone and mixed with other records.
func TestEncodeRecordsSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	strs := []string{"", "a", "res_01ABC", "O-12/3", `quo"te`, `back\slash`, "<tag>", "a&b", "tab\there", "nul\x00", "é", "\u2028", "\xff\xfe",
		"spaces and: punctuation,;[]{}", "line\nbreak", "bs\bff\fcr\r\x1f\u2029", "x\xc3"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	nums := []float64{0, 1, -1, 2.5, 1e-7, -1e-7, 1e21, 1.5e22, 1e20, 0.1 + 0.2, 123456789.125, math.Copysign(0, -1), 1e-6, 5e-324,
		math.MaxFloat64, 3, 42, -7, 1e15, 999999999999999, -999999999999999, 1 << 52, 1e14 + 0.5}
	num := func() float64 { return nums[rng.IntN(len(nums))] }
	times := []time.Time{allocT0, allocT0.Add(123456789 * time.Nanosecond), {}, time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}
	tm := func() time.Time { return times[rng.IntN(len(times))] }
	tp := func() *time.Time {
		if rng.IntN(3) == 0 {
			return nil
		}
		v := tm()
		return &v
	}
	las := func() []LineAllocation {
		switch rng.IntN(3) {
		case 0:
			return nil
		case 1:
			return []LineAllocation{}
		}
		out := make([]LineAllocation, 1+rng.IntN(3))
		for i := range out {
			out[i] = LineAllocation{LocationID: str(), Quantity: num(), ReservationID: str()}
		}
		return out
	}
	values := func() []any {
		r := &Reservation{ID: str(), OrderID: str(), OrderVersion: rng.Int64N(1e12) - 5, LineID: str(), SKU: str(), LocationID: str(), Quantity: num(),
			Status: ReservationStatuses[rng.IntN(4)], ExpiresAt: tp(), Priority: rng.IntN(2000) - 1000, CreatedAt: tm(), UpdatedAt: tm(),
			ReleasedAt: tp(), ReleaseReason: []string{"", ReleaseCancelled, str()}[rng.IntN(3)]}
		a := &Allocation{OrderID: str(), OrderVersion: rng.Int64N(100), Status: AllocationStatuses[rng.IntN(len(AllocationStatuses))],
			ReasonCode: []string{"", ReasonInsufficientATP}[rng.IntN(2)], Fill: FillPolicies[rng.IntN(3)], Priority: rng.IntN(5),
			EarliestPromiseDate: tp(), Notified: rng.IntN(2) == 0, CreatedAt: tm(), UpdatedAt: tm()}
		if rng.IntN(4) > 0 {
			a.Lines = []AllocationLine{}
			for range rng.IntN(3) {
				l := AllocationLine{LineID: str(), SKU: str(), Quantity: num(), Allocations: las(), BackorderedQuantity: num(), Shortfall: num(),
					PromiseDate: tp()}
				switch rng.IntN(3) {
				case 1:
					l.Backorders = []Backorder{}
				case 2:
					l.Backorders = []Backorder{{LocationID: str(), Quantity: num(), PromiseDate: tm()}, {LocationID: str(), Quantity: num(), PromiseDate: tm()}}
				}
				a.Lines = append(a.Lines, l)
			}
		}
		o := &Order{ExternalOrderID: str(), Status: str(), Channel: str(), OrderedAt: tp(), CreatedAt: tm(), UpdatedAt: tm()}
		o.Priority, o.RequestedDate, o.Fill, o.MinQuantity = rng.IntN(3)-1, tp(), []FillPolicy{"", FillComplete}[rng.IntN(2)], []float64{0, num()}[rng.IntN(2)]
		o.MaxLocations, o.MaxLatenessDays, o.Version = rng.IntN(3), rng.IntN(3), rng.Int64N(3)
		if rng.IntN(4) > 0 {
			o.Lines = []OrderLine{}
			for range rng.IntN(3) {
				o.Lines = append(o.Lines, OrderLine{LineID: []string{"", str()}[rng.IntN(2)], SKU: str(), Quantity: num(), LocationID: str()})
			}
		}
		ev := &DomainEvent{ID: str(), Type: str(), OrganizationID: str(), Timestamp: tm()}
		switch rng.IntN(4) {
		case 0:
			s := AllocationSucceeded{OrderID: str(), OrderVersion: rng.Int64N(9), Partial: rng.IntN(2) == 0}
			if rng.IntN(4) > 0 {
				s.Lines = []EventLine{{LineID: str(), Allocations: las(), BackorderedQuantity: num(), PromiseDate: tp()}}
			}
			ev.Data = s
		case 1:
			f := AllocationFailed{OrderID: str(), OrderVersion: rng.Int64N(9), ReasonCode: str(), Message: []string{"", str()}[rng.IntN(2)],
				EarliestPromiseDate: tp()}
			if rng.IntN(4) > 0 {
				f.Lines = []ShortLine{{LineID: str(), Shortfall: num()}}
			}
			ev.Data = f
		case 2:
			ev.Data = map[string]any{"jobId": str(), "n": num()}
		}
		fp := func() *float64 {
			if rng.IntN(2) == 0 {
				return nil
			}
			v := num()
			return &v
		}
		event := func() *ExternalEvent {
			e := &ExternalEvent{ID: str(), Name: str(), Type: EventType(str()), StartsAt: tm(), EndsAt: tm(), IsGlobal: rng.IntN(2) == 0,
				IsOrgWide: rng.IntN(2) == 0, ProductMasterID: str(), LocationID: str(), CreatedAt: tm(), UpdatedAt: tm()}
			if rng.IntN(3) > 0 {
				e.Value = &EventValue{LiftPct: fp(), StackingMode: StackingMode(str()), Description: str(), PriceChangePct: fp(), Mechanic: str(),
					Intensity: fp()}
			}
			if rng.IntN(2) == 0 {
				e.ProductMaster = &ProductRef{ID: str(), Name: str(), SKU: str()}
			}
			if rng.IntN(2) == 0 {
				e.Location = &LocationRef{ID: str(), Name: str(), Code: str()}
			}
			return e
		}
		qp := func() *Quantity {
			if rng.IntN(3) == 0 {
				return nil
			}
			v := Quantity([]float64{num(), 12.345, -0.004, math.NaN(), 1e300}[rng.IntN(5)])
			return &v
		}
		ch := &ChangeEntry{ID: str(), ChangeType: str(), ScenarioID: str(), EventID: str(), ProductMasterID: str(), LocationID: str(), Actor: str(),
			PreviousTotal: qp(), NewTotal: qp(), Delta: qp(), HorizonWeeks: rng.IntN(3), SeriesCount: rng.IntN(3) - 1, Reason: str(),
			CreatedAt: tm(), EffectStatus: str(), UpdatedAt: tp()}
		switch rng.IntN(4) {
		case 1:
			ch.Pending = &PendingEffect{}
		case 2:
			ch.Pending = &PendingEffect{New: event()}
		case 3:
			ch.Pending = &PendingEffect{Old: event(), New: event()}
		}
		sc := &Scenario{ID: str(), Name: str(), Description: str(), Type: ScenarioType(str()), Status: ScenarioStatus(str()),
			CreatedAt: tm(), UpdatedAt: tm(), PublishedAt: tp(), ArchivedAt: tp()}
		sc.Assumptions = Assumptions{Narrative: str(), GlobalLiftPct: fp()}
		switch rng.IntN(3) {
		case 1:
			sc.Assumptions.CategoryAdjustments = []CategoryAdjustment{}
		case 2:
			sc.Assumptions.CategoryAdjustments = []CategoryAdjustment{{CategoryID: str(), LiftPct: num()}, {CategoryID: str(), LiftPct: num()}}
		}
		switch rng.IntN(3) {
		case 1:
			sc.Assumptions.ChannelAdjustments = []ChannelAdjustment{}
		case 2:
			sc.Assumptions.ChannelAdjustments = []ChannelAdjustment{{ChannelID: str(), LiftPct: num()}}
		}
		switch rng.IntN(3) {
		case 1:
			sc.Assumptions.IncludedEventIDs = []string{}
		case 2:
			sc.Assumptions.IncludedEventIDs = []string{str(), str()}
		}
		lv := &InventoryLevel{SKU: str(), LocationID: str(), QuantityOnHand: num(), QuantityReserved: num(), ReorderPoint: num(), UpdatedAt: tm()}
		switch rng.IntN(4) {
		case 1:
			lv.Bins, lv.Lots = map[string]float64{}, []Lot{}
		case 2:
			lv.Bins = map[string]float64{str(): num(), str(): num(), str(): num()}
			lv.Lots = []Lot{{LotID: str(), Quantity: num(), ExpiresAt: tp()}, {LotID: str(), Quantity: num(), ExpiresAt: tp()}}
		}
		pos := func() StockPosition {
			return StockPosition{LocationID: str(), OnHand: num(), Reserved: num(), Available: num(), Inbound: num(), ReorderPoint: num(),
				Forecast: num(), WeeksOfCoverBefore: fp(), WeeksOfCoverAfter: fp(), DaysToStockoutBefore: fp(), DaysToStockoutAfter: fp(),
				ProjectedEndBefore: num(), ProjectedEndAfter: num()}
		}
		rec := &Recommendation{ID: str(), ProductMasterID: str(), SourceLocationID: str(), DestLocationID: str(), Quantity: num(),
			Priority: Priority(str()), Status: RecommendationStatus(str()), Reason: str(), EstimatedROI: fp(), CreatedAt: tm(), UpdatedAt: tm(),
			ExpiresAt: tm(), ApprovedAt: tp(), ApprovedBy: str(), RejectedAt: tp(), RejectedBy: str(), Comment: str(), ExecutedAt: tp(),
			ExecutedBy: str(), TransferID: str(), ExpiredAt: tp(), ExpiryReason: str()}
		if rng.IntN(4) > 0 {
			rec.Explanation = &Explanation{Source: pos(), Destination: pos(), WindowWeeks: rng.IntN(20) - 2, LeadTimeDays: num(), Shortfall: num(),
				Surplus: num(), StockDifferencePct: num(), LostSalesAvoided: num(), UnitMargin: fp(), UnitMarginSource: str(),
				TransferCostPerUnit: num(), TransferCost: num(), MarginSaved: fp(), Formula: str()}
		}
		if rng.IntN(4) == 0 { // a recommendation's event: the recommendation, mostly without its explanation
			d := *rec
			if rng.IntN(3) > 0 {
				d.Explanation = nil
			}
			ev.Data = d
		}
		fig := &ChangeFigures{PreviousTotal: qp(), NewTotal: qp(), Delta: qp(), SeriesCount: rng.IntN(3) - 1, EffectStatus: str(), UpdatedAt: tp()}
		return []any{r, a, o, ev, &Product{ID: str(), Name: str()}, (*Reservation)(nil), event(), ch, sc, lv, rec, fig}
	}
	for i := range 3000 {
		var recs []Record
		for j, v := range values() {
			recs = append(recs, Put([]string{KindReservation, KindAllocation, KindOrder, KindPendingEvent, KindProduct, KindReservation, KindEvent, KindForecastChange, KindScenario, KindInventory, KindRecommendation, KindChangeFigures}[j], str(), v))
		}
		recs = append(recs, Del(KindOrder, str()))
		rng.Shuffle(len(recs), func(a, b int) { recs[a], recs[b] = recs[b], recs[a] })
		recs = recs[:1+rng.IntN(len(recs))]
		want, wantErr := json.Marshal(recs)
		got, gotErr := EncodeRecords(recs)
		if (wantErr == nil) != (gotErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("case %d:\nencoding/json %s (%v)\nEncodeRecords %s (%v)", i, want, wantErr, got, gotErr)
		}
		// AppendJSON (responses, snapshots) writes the same bytes for the values it takes, pointers
		// or not, after what the buffer holds.
		for _, r := range recs {
			vs := []any{r.Value}
			switch v := r.Value.(type) {
			case *ExternalEvent:
				vs = append(vs, *v)
			case *ChangeEntry:
				vs = append(vs, *v)
			case *Scenario:
				vs = append(vs, *v)
			}
			for _, v := range vs {
				want, wantErr := json.Marshal(v)
				got, ok := AppendJSON([]byte("x"), v)
				if ok && (wantErr != nil || !bytes.Equal(got[1:], want)) || string(got[:1]) != "x" || !ok && len(got) != 1 {
					t.Fatalf("case %d, AppendJSON(%T):\nencoding/json %s (%v)\nAppendJSON    %s (%v)", i, v, want, wantErr, got, ok)
				}
			}
		}
	}
}

// TestAppendJSONTakesEventWrites: the records of an event write and its response take the
// hand-written path (a fallback would still be correct, but slow).
func TestAppendJSONTakesEventWrites(t *testing.T) {
	lift := 0.25
	e := ExternalEvent{ID: "evt_1", Name: `Promo "spring" <2027>`, Type: "PROMOTION", StartsAt: allocT0, EndsAt: allocT0.AddDate(0, 0, 7),
		Value: &EventValue{LiftPct: &lift, StackingMode: "MULTIPLICATIVE"}, ProductMasterID: "prd_1", CreatedAt: allocT0, UpdatedAt: allocT0,
		ProductMaster: &ProductRef{ID: "prd_1", Name: "Cola é", SKU: "sku-1"}}
	zero := Quantity(0)
	c := ChangeEntry{ID: "chg_1", ChangeType: ChangeEventCreated, EventID: e.ID, Actor: "key:planner", Delta: &zero, HorizonWeeks: 12,
		Reason: `event "Promo" (PROMOTION) created`, CreatedAt: allocT0, EffectStatus: EffectPending, Pending: &PendingEffect{New: &e}}
	for _, v := range []any{e, &e, c, &c} {
		got, ok := AppendJSON(nil, v)
		want, err := json.Marshal(v)
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Errorf("AppendJSON(%T) = %s, %v; want %s (%v)", v, got, ok, want, err)
		}
	}
}

// BenchmarkEncodeRecords encodes the records of an allocated order (order, two reservations, the
// allocation, its event) with the hand-written encodings and with encoding/json.
func BenchmarkEncodeRecords(b *testing.B) {
	f := newTenantFixture(&testing.T{})
	f.seed(`{"levels":[{"skuId":"A","locationId":"DC","quantityOnHand":1000000},{"skuId":"B","locationId":"DC","quantityOnHand":1000000}]}`)
	var body bytes.Buffer
	body.WriteString(`{"orders":[`)
	for i := range 1000 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"externalOrderId":"O-%d","lines":[{"skuId":"A","quantity":3,"locationId":"DC"},{"skuId":"B","quantity":2,"locationId":"DC"}]}`, i)
	}
	body.WriteString("]}")
	rows := fixtureRows(b, ImportOrders, body.Bytes())
	res := f.st.ApplyImport(rows, f.now)
	recs := append(res.Records, f.st.AllocateImported(res.Records, f.now).Records...)
	b.Run("EncodeRecords", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeRecords(recs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(recs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestEncodeRecordsRecycledBuffer: an entry encoded into the recycled buffer of a larger one is
// exactly its own bytes (nothing of the earlier entry shows), and a recycled buffer too small for
// the next entry is not used for it.
func TestEncodeRecordsRecycledBuffer(t *testing.T) {
	entry := func(n int, name string) []Record {
		recs := make([]Record, n)
		for i := range recs {
			id := fmt.Sprintf("R%06d", i)
			recs[i] = Put(KindReservation, id, &Reservation{ID: id, OrderID: name, LineID: "1", SKU: "S", LocationID: "L", Quantity: 1,
				Status: ResHeld, CreatedAt: allocT0, UpdatedAt: allocT0})
		}
		return recs
	}
	for _, n := range []int{8000, 4000, 12000, 4000} { // about 2.7, 1.4, 4.1 and 1.4 MB
		recs := entry(n, fmt.Sprint("order-", n))
		got, err := EncodeRecords(recs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d records: EncodeRecords into a recycled buffer differs from json.Marshal", n)
		}
		RecycleEntry(got)
	}
}

// TestAppendJSONStringEveryByte: each byte value, alone and between plain characters, is escaped
// as encoding/json escapes it (the table of plain bytes against the reference).
func TestAppendJSONStringEveryByte(t *testing.T) {
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)}) + "z"} {
			want, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := appendJSONString(nil, s); string(got) != string(want) {
				t.Fatalf("byte %#x: %s, encoding/json %s", c, got, want)
			}
		}
	}
}
