package http

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/supplyplan/supplyplan"
)

func TestCSVImportBody(t *testing.T) {
	tests := []struct {
		kind supplyplan.ImportKind
		csv  string
		want string
	}{
		{supplyplan.ImportCatalog, "\ufeffexternalId,name,unitCost,shelfLifeDays\nA,\"x, y\",1.5,3\nB,,abc,\n",
			`{"products":[{"externalId":"A","name":"x, y","shelfLifeDays":3,"unitCost":1.5},{"externalId":"B","unitCost":"abc"}]}`},
		{supplyplan.ImportDemandHistory, "skuId,locationId,weekStarting,actualDemand,stockout\nP,L,2026-01-05,NaN,yes\n",
			`{"records":[{"actualDemand":"NaN","locationId":"L","skuId":"P","stockout":"yes","weekStarting":"2026-01-05"}]}`},
		{supplyplan.ImportOrders, "externalOrderId,priority,lines.skuId,lines.quantity\nO1,2,A,1\nO1,,B,2\nO2,,A,3\nO1,,C,4\n",
			`{"orders":[{"externalOrderId":"O1","lines":[{"quantity":1,"skuId":"A"},{"quantity":2,"skuId":"B"}],"priority":2},` +
				`{"externalOrderId":"O2","lines":[{"quantity":3,"skuId":"A"}]},{"externalOrderId":"O1","lines":[{"quantity":4,"skuId":"C"}]}]}`},
		{supplyplan.ImportPurchaseOrders, "externalPoNumber,supplierId\nPO1,S\n",
			`{"purchaseOrders":[{"externalPoNumber":"PO1","lines":[],"supplierId":"S"}]}`},
	}
	for _, tc := range tests {
		got, err := csvImportBody(tc.kind, []byte(tc.csv), 100)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s %q:\ngot  %s %v\nwant %s", tc.kind, tc.csv, got, err, tc.want)
		}
	}
	if _, err := csvImportBody(supplyplan.ImportCatalog, []byte("externalId\nA\nB\nC\n"), 2); supplyplan.ErrorCode(err) != supplyplan.ETOOLARGE {
		t.Errorf("3 rows over a limit of 2: %v", err)
	}
	for _, bad := range []string{"", "externalId,nope\nA,1\n", "externalId\n\"A\n", "externalId,name\nA\n"} {
		if _, err := csvImportBody(supplyplan.ImportCatalog, []byte(bad), 100); supplyplan.ErrorCode(err) != supplyplan.EVALIDATION {
			t.Errorf("%q: %v, want a validation error", bad, err)
		}
	}
}

func TestCSVImportColumnsDocumented(t *testing.T) {
	for _, k := range supplyplan.ImportKinds {
		cols := importCSVColumns(k)
		header := strings.Split(importCSVHeader(k), ",")
		if len(header) != len(cols) {
			t.Errorf("%s: documented header %v, columns %v", k, header, cols)
		}
		for _, h := range header {
			if _, ok := cols[h]; !ok {
				t.Errorf("%s: documented column %s is not accepted", k, h)
			}
		}
	}
	if !strings.Contains(importCSVHeader(supplyplan.ImportOrders), "lines.locationId") || !strings.Contains(importCSVHeader(supplyplan.ImportOrders), "fill") {
		t.Errorf("orders header %s", importCSVHeader(supplyplan.ImportOrders))
	}
}

// TestStreamCSVPages checks that a download walks every page, and that an error on the first page
// is the usual error while one on a later page ends the body.
func TestStreamCSVPages(t *testing.T) {
	pages := func(n int, failAt int) csvPage {
		return func(_ context.Context, page int) ([][]string, bool, error) {
			if page == failAt {
				return nil, false, errors.New("boom")
			}
			return [][]string{{fmt.Sprint(page), "a,b"}}, page < n-1, nil
		}
	}
	var ctx fasthttp.RequestCtx
	r := &Request{Ctx: &ctx, Context: context.Background()}
	if err := r.streamCSV("x.csv", []string{"page", "v"}, pages(3, -1)); err != nil {
		t.Fatal(err)
	}
	if got, want := string(ctx.Response.Body()), "page,v\n0,\"a,b\"\n1,\"a,b\"\n2,\"a,b\"\n"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	if ct := string(ctx.Response.Header.ContentType()); ct != "text/csv; charset=utf-8" {
		t.Errorf("content type %s", ct)
	}
	var ctx2 fasthttp.RequestCtx
	r = &Request{Ctx: &ctx2, Context: context.Background()}
	if err := r.streamCSV("x.csv", []string{"page"}, pages(3, 0)); err == nil {
		t.Error("an error on the first page was not returned")
	}
	var ctx3 fasthttp.RequestCtx
	r = &Request{Ctx: &ctx3, Context: context.Background()}
	if err := r.streamCSV("x.csv", []string{"page", "v"}, pages(5, 2)); err != nil {
		t.Fatal(err)
	}
	if got, want := string(ctx3.Response.Body()), "page,v\n0,\"a,b\"\n1,\"a,b\"\n"; got != want {
		t.Errorf("body after a failing page %q, want %q", got, want)
	}
}

func TestWantsCSV(t *testing.T) {
	for accept, want := range map[string]bool{"text/csv": true, "Text/CSV; charset=utf-8": true, "": false, "*/*": false,
		"application/json": false, "application/json, text/csv": false, "text/csv, application/json": true,
		"application/json;q=0.5, text/csv": true, "text/csv;q=0.2, application/json;q=0.9": false, "text/csv;q=0": false,
		"text/html, text/csv;q=0.8, */*;q=0.1": true} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.Set("Accept", accept)
		if got := wantsCSV(&Request{Ctx: &ctx}); got != want {
			t.Errorf("Accept %q: %v, want %v", accept, got, want)
		}
	}
}
