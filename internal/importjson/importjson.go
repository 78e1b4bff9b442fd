// Package importjson is the wire decoding of the bulk imports: it splits a request body into its
// raw rows (SplitBody, with the strict JSON check of internal/strictjson) and decodes rows into
// supplyplan.DecodedRows (DecodeRows, with a fast path for demand-history rows), which the domain
// then checks against the tenant's state (supplyplan.TenantState.ApplyImport). HTTP splits the
// body when the request arrives; an import job decodes the rows chunk by chunk, outside the
// tenant's actor.
package importjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/jsonscan"
	"github.com/supplyplan/supplyplan/internal/strictjson"
)

// bodyTypes are the shapes of the import bodies for the strict check: for each kind, an object
// whose one field is the kind's array key holding its rows.
var bodyTypes = func() map[supplyplan.ImportKind]reflect.Type {
	rows := map[supplyplan.ImportKind]reflect.Type{
		supplyplan.ImportCatalog:        reflect.TypeFor[supplyplan.CatalogRow](),
		supplyplan.ImportInventory:      reflect.TypeFor[supplyplan.InventoryRow](),
		supplyplan.ImportSuppliers:      reflect.TypeFor[supplyplan.SupplierRow](),
		supplyplan.ImportPurchaseOrders: reflect.TypeFor[supplyplan.PurchaseOrderRow](),
		supplyplan.ImportOrders:         reflect.TypeFor[supplyplan.OrderRow](),
		supplyplan.ImportDemandHistory:  reflect.TypeFor[supplyplan.DemandHistoryRow](),
	}
	out := make(map[supplyplan.ImportKind]reflect.Type, len(rows))
	for kind, row := range rows {
		out[kind] = reflect.StructOf([]reflect.StructField{{Name: "Rows", Type: reflect.SliceOf(row),
			Tag: reflect.StructTag(fmt.Sprintf(`json:%q`, kind.ArrayKey()))}})
	}
	return out
}()

// SplitBody checks a whole request body of kind: a JSON object holding the kind's array, at most
// maxRows items (no limit when maxRows <= 0). It returns the raw rows, which alias body. Errors
// are VALIDATION_ERROR or PAYLOAD_TOO_LARGE.
func SplitBody(kind supplyplan.ImportKind, body []byte, maxRows int) ([]json.RawMessage, error) {
	bodyType, ok := bodyTypes[kind]
	if !ok {
		return nil, supplyplan.Invalid("type", "unknown import kind %q", kind)
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, supplyplan.Invalid("body", "must be a JSON object with a %q array", kind.ArrayKey())
	}
	// One strict pass (syntax, UTF-8, duplicate keys, case-variant keys made unknown) instead of
	// json.Valid: the rows split from the result are then decoded as they are.
	// The rows are split in the same pass (a second scan was an eighth of an import's CPU), unless
	// the check renamed case-variant keys, which moves them.
	key := kind.ArrayKey()
	trimmed, ignored, rows, found, isArray, err := strictjson.CheckArray(trimmed, bodyType, key)
	if err != nil {
		return nil, err
	}
	if len(ignored) > 0 {
		rows, isArray, found = splitArray(trimmed, key)
	}
	switch {
	case !found:
		return nil, supplyplan.Invalid(key, "is required: an array of rows")
	case !isArray:
		return nil, supplyplan.Invalid(key, "must be an array")
	case len(rows) == 0:
		return nil, supplyplan.Invalid(key, "must contain at least one row")
	case maxRows > 0 && len(rows) > maxRows:
		return nil, &supplyplan.Error{Code: supplyplan.ETOOLARGE, Message: "Payload too large",
			Details: map[string][]string{key: {fmt.Sprintf("at most %d rows per request, got %d", maxRows, len(rows))}}}
	}
	return rows, nil
}

// splitArray returns the raw elements of the top-level array under key of a JSON object, or
// found=false when the object has no such key. b must be valid JSON (checked by the caller): the
// scan then only needs to track strings and nesting. The last occurrence of a repeated key wins, as
// with encoding/json. Elements alias b.
func splitArray(b []byte, key string) (elems []json.RawMessage, isArray, found bool) {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false, false
	}
	i++
	for {
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) || b[i] == '}' {
			return elems, isArray, found
		}
		if b[i] == ',' {
			i++
			continue
		}
		ks := i
		i = jsonscan.SkipString(b, i)
		k := b[ks+1 : i-1]
		match := string(k) == key
		if !match && bytes.IndexByte(k, '\\') >= 0 {
			var dk string
			if json.Unmarshal(b[ks:i], &dk) == nil {
				match = dk == key
			}
		}
		i = jsonscan.SkipWS(b, i)
		i++ // ':'
		i = jsonscan.SkipWS(b, i)
		vs := i
		i = jsonscan.SkipValue(b, i)
		if !match {
			continue
		}
		found = true
		if b[vs] != '[' {
			elems, isArray = nil, false
			continue
		}
		isArray = true
		elems = elems[:0]
		j := vs + 1
		for {
			j = jsonscan.SkipWS(b, j)
			if j >= i-1 || b[j] == ']' {
				break
			}
			if b[j] == ',' {
				j++
				continue
			}
			es := j
			j = jsonscan.SkipValue(b, j)
			elems = append(elems, json.RawMessage(b[es:j]))
		}
	}
}

// DecodeRows decodes raw rows of kind (as SplitBody returns them) whose request index starts at
// offset. A row that does not decode, or holds a string or number beyond its bounds, is a row
// error of the result; the others are checked against the tenant's state by ApplyImport.
func DecodeRows(kind supplyplan.ImportKind, raw []json.RawMessage, offset int) supplyplan.DecodedRows {
	d := supplyplan.DecodedRows{Kind: kind}
	var in interner
	var slab []demandSlab
	var orders []orderVals
	var lines lineArena
	switch kind {
	case supplyplan.ImportDemandHistory:
		sc, _ := demandScratches.Get().(*demandScratch)
		if sc == nil {
			sc = new(demandScratch)
		}
		slab = slices.Grow(sc.slab[:0], len(raw))[:len(raw)]
		clear(slab)
		in = interner{}
		d.Demand = slices.Grow(sc.rows[:0], len(raw))
		d.Index = slices.Grow(sc.index[:0], len(raw))
		d.DemandOut = slices.Grow(sc.out[:0], len(raw))
		sc.slab, sc.rows, sc.index, sc.out = slab, d.Demand, d.Index, d.DemandOut
		d.Scratch = sc
	case supplyplan.ImportOrders:
		in, orders = interner{}, make([]orderVals, len(raw))
		d.Orders = make([]supplyplan.OrderRow, 0, len(raw))
		d.Index = make([]int, 0, len(raw))
	}
	for i, r := range raw {
		idx := offset + i
		var err *supplyplan.RowError
		if kind == supplyplan.ImportDemandHistory {
			var row supplyplan.DemandHistoryRow
			if decodeDemandFast(r, in, &slab[i], &row) {
				d.Demand = append(d.Demand, row)
				d.Index = append(d.Index, idx)
				continue
			}
		}
		if kind == supplyplan.ImportOrders {
			var row supplyplan.OrderRow
			if decodeOrderFast(r, in, &orders[i], &lines, &row) {
				if !orderInBounds(&row) {
					if err = supplyplan.CheckRowInput(idx, &row); err != nil {
						d.Errors = append(d.Errors, *err)
						continue
					}
				}
				d.Orders = append(d.Orders, row)
				d.Index = append(d.Index, idx)
				continue
			}
		}
		switch kind {
		case supplyplan.ImportCatalog:
			var row supplyplan.CatalogRow
			if err = decodeRow(idx, r, &row); err == nil {
				d.Catalog = append(d.Catalog, row)
			}
		case supplyplan.ImportInventory:
			var row supplyplan.InventoryRow
			if err = decodeRow(idx, r, &row); err == nil {
				d.Inventory = append(d.Inventory, row)
			}
		case supplyplan.ImportSuppliers:
			var row supplyplan.SupplierRow
			if err = decodeRow(idx, r, &row); err == nil {
				d.Suppliers = append(d.Suppliers, row)
			}
		case supplyplan.ImportPurchaseOrders:
			var row supplyplan.PurchaseOrderRow
			if err = decodeRow(idx, r, &row); err == nil {
				d.PurchaseOrders = append(d.PurchaseOrders, row)
			}
		case supplyplan.ImportOrders:
			var row supplyplan.OrderRow
			if err = decodeRow(idx, r, &row); err == nil {
				d.Orders = append(d.Orders, row)
			}
		case supplyplan.ImportDemandHistory:
			var row supplyplan.DemandHistoryRow
			if err = decodeRow(idx, r, &row); err == nil {
				d.Demand = append(d.Demand, row)
			}
		default:
			err = &supplyplan.RowError{Row: idx, Code: supplyplan.RowInvalidValue, Message: "unknown import kind"}
		}
		if err != nil {
			d.Errors = append(d.Errors, *err)
			continue
		}
		d.Index = append(d.Index, idx)
	}
	return d
}

// demandScratch is the memory of a demand-history chunk, reused from chunk to chunk (Release): the
// decoded rows, the values they point to, the row indexes and ApplyImport's resolved rows. Made
// fresh for every chunk it was 40 % of what an import allocated, most of the collector's work.
type demandScratch struct {
	slab  []demandSlab
	rows  []supplyplan.DemandHistoryRow
	index []int
	out   []supplyplan.DemandRow
}

var demandScratches sync.Pool

// Release hands the memory of d, decoded by DecodeRows, and of resolved, ApplyImport's result for
// it, to the next chunk. Nothing of either may be used afterwards. A chunk that is never released
// is collected as usual.
func Release(d supplyplan.DecodedRows, resolved []supplyplan.DemandRow) {
	sc, ok := d.Scratch.(*demandScratch)
	if !ok {
		return
	}
	if cap(resolved) > cap(sc.out) { // ApplyImport grew it
		sc.out = resolved[:0]
	}
	demandScratches.Put(sc)
}

// decodeRow decodes one row of request index i into v, turning encoding/json errors into row
// errors, then checks every string and number of the row against its bounds.
func decodeRow(i int, raw json.RawMessage, v any) *supplyplan.RowError {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return &supplyplan.RowError{Row: i, Field: "", Code: supplyplan.RowInvalidType, Message: "row must be a JSON object"}
	}
	if err := json.Unmarshal(t, v); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			field := supplyplan.JSONFieldPath(typ.Field) // without the names of embedded structs (OrderTermsRow)
			return &supplyplan.RowError{Row: i, Field: field, Code: supplyplan.RowInvalidType, Message: fmt.Sprintf("%s has the wrong type (%s)", field, typ.Value)}
		}
		return &supplyplan.RowError{Row: i, Code: supplyplan.RowInvalidType, Message: jsonMessage(err)}
	}
	return supplyplan.CheckRowInput(i, v)
}

func jsonMessage(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("invalid JSON at offset %d: %s", syn.Offset, syn.Error())
	}
	return err.Error()
}
