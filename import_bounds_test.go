package supplyplan_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/importjson"
)

// The bounds of import rows are checked through the real wire decoder (internal/importjson, which
// imports this package): hence an external test package.

// importRows decodes and applies raw rows of kind against st, as an import job's chunk does.
func importRows(t *testing.T, st *supplyplan.TenantState, kind supplyplan.ImportKind, rows ...string) supplyplan.ImportResult {
	t.Helper()
	raw := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		raw[i] = json.RawMessage(r)
	}
	res := st.ApplyImport(importjson.DecodeRows(kind, raw, 0), time.Now().UTC())
	// What is applied can always be journaled: no row can make the chunk's entry unencodable.
	if _, err := supplyplan.EncodeRecords(res.Records); err != nil {
		t.Fatalf("records of the applied rows do not encode: %v", err)
	}
	for _, d := range res.Demand {
		if !supplyplan.NumberOK(d.Actual) || !supplyplan.NumberOK(d.Forecasted) || d.Week.Before(supplyplan.MinTime) || d.Week.After(supplyplan.MaxTime) {
			t.Fatalf("demand row out of bounds applied: %+v", d)
		}
	}
	for _, r := range res.Records {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func wantRowError(t *testing.T, res supplyplan.ImportResult, row int, field string) {
	t.Helper()
	for _, e := range res.Errors {
		if e.Row == row {
			if e.Field != field || e.Code != supplyplan.RowInvalidValue || !strings.Contains(e.Message, field) {
				t.Fatalf("row %d error %+v, want INVALID_VALUE on %s", row, e, field)
			}
			return
		}
	}
	t.Fatalf("no error on row %d (errors %+v), want one on %s", row, res.Errors, field)
}

func TestImportRowsOutOfBoundsAreRowErrors(t *testing.T) {
	st := supplyplan.NewTenantState("o")
	long := strings.Repeat("n", 100_000)
	res := importRows(t, st, supplyplan.ImportCatalog,
		`{"externalId":"P","name":"ok","unitCost":1,"unitPrice":2}`,
		`{"externalId":"Q","name":"`+long+`"}`,
		`{"externalId":"R","unitPrice":1e308}`,
		`{"externalId":"S","categoryId":"`+long+`"}`,
		`{"externalId":"T","shelfLifeDays":9000000000000000000}`)
	if res.Applied != 1 || len(res.Errors) != 4 {
		t.Fatalf("applied %d, errors %+v", res.Applied, res.Errors)
	}
	wantRowError(t, res, 1, "name")
	wantRowError(t, res, 2, "unitPrice")
	wantRowError(t, res, 3, "categoryId")
	wantRowError(t, res, 4, "shelfLifeDays")

	res = importRows(t, st, supplyplan.ImportInventory,
		`{"skuId":"P","locationId":"L","quantityOnHand":5,"lots":[{"lotId":"a","quantity":5,"expiresAt":"2027-01-01"}]}`,
		`{"skuId":"P","locationId":"M","lots":[{"lotId":"a","quantity":1,"expiresAt":"9999-12-31T23:00:00-05:00"}]}`,
		`{"skuId":"P","locationId":"N","quantityOnHand":1e308}`,
		`{"skuId":"P","locationId":"O","reorderPoint":1e13}`,
		`{"skuId":"P","locationId":"`+long+`"}`,
		`{"skuId":"P","locationId":"L","binId":"B1","quantityOnHand":1e12}`,
		`{"skuId":"P","locationId":"L","binId":"B2","quantityOnHand":1e12}`)
	wantRowError(t, res, 1, "lots[0].expiresAt")
	wantRowError(t, res, 2, "quantityOnHand")
	wantRowError(t, res, 3, "reorderPoint")
	wantRowError(t, res, 4, "locationId")
	if res.Applied != 3 {
		t.Fatalf("applied %d, want 3 (errors %+v)", res.Applied, res.Errors)
	}
	importRows(t, st, supplyplan.ImportSuppliers, `{"externalId":"SUP"}`)

	res = importRows(t, st, supplyplan.ImportPurchaseOrders,
		`{"externalPoNumber":"PO1","supplierId":"SUP","destinationLocationId":"L","lines":[{"skuId":"P","quantity":10,"unitCost":1}]}`,
		`{"externalPoNumber":"PO2","supplierId":"SUP","destinationLocationId":"L","lines":[{"skuId":"P","quantity":1e308,"unitCost":1}]}`,
		`{"externalPoNumber":"PO3","supplierId":"SUP","destinationLocationId":"L","lines":[{"skuId":"P","quantity":1,"unitCost":2e12}]}`,
		`{"externalPoNumber":"PO4","supplierId":"SUP","destinationLocationId":"L","expectedAt":"9999-12-31T23:00:00-05:00","lines":[{"skuId":"P","quantity":1,"unitCost":1}]}`)
	wantRowError(t, res, 1, "lines[0].quantity")
	wantRowError(t, res, 2, "lines[0].unitCost")
	wantRowError(t, res, 3, "expectedAt")
	av, err := st.Availability("P", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range av {
		if !supplyplan.StoredOK(a.ATP) || !supplyplan.StoredOK(a.Inbound) {
			t.Fatalf("availability %+v", a)
		}
	}

	res = importRows(t, st, supplyplan.ImportOrders,
		`{"externalOrderId":"O1","orderedAt":"0000-01-01T00:00:00+01:00","lines":[{"skuId":"P","quantity":1,"locationId":"L"}]}`,
		`{"externalOrderId":"O2","lines":[{"skuId":"P","quantity":1e308,"locationId":"L"}]}`,
		`{"externalOrderId":"O3","channel":"`+long+`","lines":[{"skuId":"P","quantity":1,"locationId":"L"}]}`)
	wantRowError(t, res, 0, "orderedAt")
	wantRowError(t, res, 1, "lines[0].quantity")
	wantRowError(t, res, 2, "channel")
}

func TestImportDemandRowsOutOfBounds(t *testing.T) {
	st := supplyplan.NewTenantState("o")
	importRows(t, st, supplyplan.ImportCatalog, `{"externalId":"P"}`)
	importRows(t, st, supplyplan.ImportInventory, `{"skuId":"P","locationId":"L"}`)
	var rows []string
	for i := range 100 {
		rows = append(rows, fmt.Sprintf(`{"skuId":"P","locationId":"L","weekStarting":"%s","actualDemand":%d}`,
			time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*i).Format(time.DateOnly), i))
	}
	rows = append(rows,
		`{"skuId":"P","locationId":"L","weekStarting":"1969-12-29","actualDemand":1}`,
		`{"skuId":"P","locationId":"L","weekStarting":"2026-01-05","actualDemand":1e308}`,
		`{"skuId":"P","locationId":"L","weekStarting":"2026-01-05","forecastedDemand":1e13}`,
		`{"skuId":"P","locationId":"L","weekStarting":"2026-01-05","onHand":-1e300}`,
		`{"skuId":"P","locationId":"L","weekStarting":"2100-01-04"}`,
		// not on the fast path (an escaped key): the same checks
		`{"sku\u0049d":"P","locationId":"L","weekStarting":"2026-01-05","actualDemand":1e308}`)
	res := importRows(t, st, supplyplan.ImportDemandHistory, rows...)
	if res.Applied != 100 || len(res.Demand) != 100 {
		t.Fatalf("applied %d, want the 100 good rows (errors %+v)", res.Applied, res.Errors)
	}
	wantRowError(t, res, 100, "weekStarting")
	wantRowError(t, res, 101, "actualDemand")
	wantRowError(t, res, 102, "forecastedDemand")
	wantRowError(t, res, 103, "onHand")
	wantRowError(t, res, 104, "weekStarting")
	wantRowError(t, res, 105, "actualDemand")
}
