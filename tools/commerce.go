package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/supplyplan/supplyplan"
)

// productView is a product as the tools show it.
type productView struct {
	ID         string   `json:"id"`
	SKU        string   `json:"sku"`
	Name       string   `json:"name"`
	CategoryID string   `json:"categoryId,omitempty"`
	UnitPrice  *float64 `json:"unitPrice,omitempty"`
}

func viewProduct(p supplyplan.Product) productView {
	return productView{ID: p.ID, SKU: p.SKU, Name: p.Name, CategoryID: p.CategoryID, UnitPrice: p.UnitPrice}
}

const productSchema = `{"type":"object","properties":{
  "id":{"type":"string"},"sku":{"type":"string"},"name":{"type":"string"},
  "categoryId":{"type":"string"},"unitPrice":{"type":"number"}},"required":["id","sku","name"]}`

func init() {
	register(&toolSpec{
		capability: supplyplan.CapCatalog, public: true, needs: hasCatalog,
		def: Def{
			Name: "search_products", Title: "Search products",
			Description: "Search the merchant's catalog by text (id, SKU or name) and category. Paginated: pass nextCursor back as cursor.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
  "query":{"type":"string","maxLength":200,"description":"Text matched against product id, SKU and name (case-insensitive)"},
  "categoryId":{"type":"string","maxLength":200,"description":"Only products of this category"},
  "limit":{"type":"integer","minimum":1,"maximum":50,"default":10},
  "cursor":{"type":"string","description":"nextCursor of the previous page"}},"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "products":{"type":"array","items":` + productSchema + `},
  "total":{"type":"integer"},"nextCursor":{"type":"string"}},"required":["products","total"]}`),
			Annotations: readOnly("Search products"),
		},
		run: searchProducts,
	})
	register(&toolSpec{
		capability: supplyplan.CapCatalog, public: true, needs: hasCatalog,
		def: Def{
			Name: "get_product", Title: "Get product",
			Description: "Get one product of the merchant's catalog by its id (or SKU).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
  "productId":{"type":"string","maxLength":200,"description":"Product id (the merchant's externalId) or SKU"}},
  "required":["productId"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"product":` + productSchema + `},"required":["product"]}`),
			Annotations:  readOnly("Get product"),
		},
		run: getProduct,
	})
	register(&toolSpec{
		capability: supplyplan.CapInventory, public: true, needs: hasCatalog,
		def: Def{
			Name: "check_availability", Title: "Check availability",
			Description: "Stock of a product per location: on hand, reserved (including what orders hold in the reservation ledger), available now, inbound on open purchase orders, and available-to-promise from the same ledger (stock and receipts due within 14 days, or by date, less what is reserved, promised to backorders or protected). With quantity: whether each location can promise it by date and the earliest date it could.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
  "productId":{"type":"string","maxLength":200,"description":"Product id or SKU"},
  "locationIds":{"type":"array","items":{"type":"string","maxLength":200},"maxItems":50,"description":"Only these locations (default: every location holding or expecting the product)"},
  "date":{"type":"string","maxLength":200,"description":"ISO date: available-to-promise at the end of this day (default: within the next 14 days)"},
  "quantity":{"type":"number","exclusiveMinimum":0,"maximum":1e12,"description":"Quantity to promise: answers canPromise (by date) and earliestDate per location"}},
  "required":["productId"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "productId":{"type":"string"},
  "locations":{"type":"array","items":{"type":"object","properties":{
    "locationId":{"type":"string"},"quantityOnHand":{"type":"number"},"quantityReserved":{"type":"number"},
    "available":{"type":"number"},"inbound":{"type":"number"},"availableToPromise":{"type":"number"},
    "canPromise":{"type":"boolean"},"earliestDate":{"type":"string","format":"date-time"}},
    "required":["locationId","quantityOnHand","quantityReserved","available","availableToPromise"]}},
  "totalAvailable":{"type":"number"},"totalAvailableToPromise":{"type":"number"},
  "date":{"type":"string","format":"date-time"},"quantity":{"type":"number"},"canPromise":{"type":"boolean"}},
  "required":["productId","locations","totalAvailable","totalAvailableToPromise"]}`),
			Annotations: readOnly("Check availability"),
		},
		run: checkAvailability,
	})
	register(&toolSpec{
		capability: supplyplan.CapInventory, public: true, needs: hasCatalog,
		def: Def{
			Name: "list_locations", Title: "List locations",
			Description: "List the merchant's stock-holding locations (stores, warehouses). Paginated: pass nextCursor back as cursor.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
  "query":{"type":"string","maxLength":200,"description":"Text matched against location id and name"},
  "limit":{"type":"integer","minimum":1,"maximum":100,"default":50},
  "cursor":{"type":"string"}},"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "locations":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"required":["id","name"]}},
  "total":{"type":"integer"},"nextCursor":{"type":"string"}},"required":["locations","total"]}`),
			Annotations: readOnly("List locations"),
		},
		run: listLocations,
	})
	register(&toolSpec{
		capability: supplyplan.CapOrders, needs: hasCatalog,
		def: Def{
			Name: "get_order_status", Title: "Get order status",
			Description: "Status and lines of a customer order by the merchant's order id. Requires a tool key of the merchant.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
  "orderId":{"type":"string","maxLength":200,"description":"The merchant's order id (externalOrderId)"}},
  "required":["orderId"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{
  "orderId":{"type":"string"},"status":{"type":"string"},"channel":{"type":"string"},
  "orderedAt":{"type":"string","format":"date-time"},"updatedAt":{"type":"string","format":"date-time"},
  "lines":{"type":"array","items":{"type":"object","properties":{"skuId":{"type":"string"},"quantity":{"type":"number"},"locationId":{"type":"string"}},"required":["skuId","quantity"]}}},
  "required":["orderId","status","lines"]}`),
			Annotations: readOnly("Get order status"),
		},
		run: getOrderStatus,
	})
}

func searchProducts(c *toolCall) (any, string, error) {
	var in struct {
		Query      string `json:"query" max:"200"`
		CategoryID string `json:"categoryId" max:"200"`
		Limit      *int   `json:"limit"`
		Cursor     string `json:"cursor" max:"200"`
	}
	if err := DecodeArgs(c.args, &in); err != nil {
		return nil, "", err
	}
	limit, err := limitArg(in.Limit, 10, 50)
	if err != nil {
		return nil, "", err
	}
	offset, err := parseOffsetCursor(c.name, in.Cursor)
	if err != nil {
		return nil, "", err
	}
	if len(in.Query) > 200 || len(in.CategoryID) > 200 {
		return nil, "", supplyplan.Invalid("query", "must be at most 200 characters")
	}
	page, err := c.deps.Catalog.ListProducts(c.ctx, c.access.Principal,
		supplyplan.ProductFilter{Query: in.Query, CategoryID: in.CategoryID, Limit: limit, Offset: offset})
	if err != nil {
		return nil, "", err
	}
	out := struct {
		Products   []productView `json:"products"`
		Total      int           `json:"total"`
		NextCursor string        `json:"nextCursor,omitempty"`
	}{Products: []productView{}, Total: page.Total}
	var b strings.Builder
	fmt.Fprintf(&b, "%d product(s) match", page.Total)
	for _, p := range page.Items {
		out.Products = append(out.Products, viewProduct(p))
		fmt.Fprintf(&b, "\n- %s (%s): %s", p.ID, p.SKU, p.Name)
	}
	if next := offset + len(page.Items); len(page.Items) > 0 && next < page.Total {
		out.NextCursor = offsetCursor(c.name, next)
	}
	return out, b.String(), nil
}

func getProduct(c *toolCall) (any, string, error) {
	var in struct {
		ProductID string `json:"productId" max:"200"`
	}
	if err := DecodeArgs(c.args, &in); err != nil {
		return nil, "", err
	}
	if err := requireString("productId", in.ProductID); err != nil {
		return nil, "", err
	}
	p, err := c.deps.Catalog.GetProduct(c.ctx, c.access.Principal, in.ProductID)
	if err != nil {
		return nil, "", err
	}
	v := viewProduct(p)
	text := fmt.Sprintf("%s (%s): %s", p.ID, p.SKU, p.Name)
	if p.UnitPrice != nil {
		text += ", price " + fmtQty(*p.UnitPrice)
	}
	return map[string]any{"product": v}, text, nil
}

func checkAvailability(c *toolCall) (any, string, error) {
	var in struct {
		ProductID   string   `json:"productId" max:"200"`
		LocationIDs []string `json:"locationIds" max:"200"`
		Date        string   `json:"date" max:"200"`
		Quantity    *float64 `json:"quantity"`
	}
	if err := DecodeArgs(c.args, &in); err != nil {
		return nil, "", err
	}
	if err := requireString("productId", in.ProductID); err != nil {
		return nil, "", err
	}
	if len(in.LocationIDs) > 50 {
		return nil, "", supplyplan.Invalid("locationIds", "must have at most 50 items")
	}
	q := supplyplan.ATPQuery{SKU: in.ProductID}
	dated := in.Date != "" || in.Quantity != nil
	if in.Date != "" {
		d, ok := supplyplan.ParseTime(in.Date)
		if !ok {
			return nil, "", supplyplan.Invalid("date", "%s", supplyplan.TimeMessage)
		}
		q.Date = &d
	}
	if in.Quantity != nil {
		if !supplyplan.NumberOK(*in.Quantity) || *in.Quantity <= 0 {
			return nil, "", supplyplan.Invalid("quantity", "must be a number > 0 and at most 1e12")
		}
		q.Quantity = *in.Quantity
	}
	if dated && c.deps.ATP == nil {
		return nil, "", supplyplan.Invalid("date", "dated availability is not available on this service")
	}
	// CatalogService.Availability answers NOT_FOUND for an unknown product or location.
	av, err := c.deps.Catalog.Availability(c.ctx, c.access.Principal, in.ProductID, in.LocationIDs)
	if err != nil {
		return nil, "", err
	}
	// The dated figures, from the same ledger: every location of the product, page by page.
	byLoc := map[string]supplyplan.ATPLine{}
	for dated {
		q.Limit, q.Offset = supplyplan.MaxPageLimit, len(byLoc)
		pg, err := c.deps.ATP.ATP(c.ctx, c.access.Principal, q)
		if err != nil {
			return nil, "", err
		}
		for _, l := range pg.Items {
			byLoc[l.LocationID] = l
		}
		if len(pg.Items) == 0 || len(byLoc) >= pg.Total {
			break
		}
	}
	type loc struct {
		LocationID   string     `json:"locationId"`
		OnHand       float64    `json:"quantityOnHand"`
		Reserved     float64    `json:"quantityReserved"`
		Available    float64    `json:"available"`
		Inbound      float64    `json:"inbound"`
		ATP          float64    `json:"availableToPromise"`
		CanPromise   *bool      `json:"canPromise,omitempty"`
		EarliestDate *time.Time `json:"earliestDate,omitempty"`
	}
	out := struct {
		ProductID  string     `json:"productId"`
		Locations  []loc      `json:"locations"`
		TotalAv    float64    `json:"totalAvailable"`
		TotalATP   float64    `json:"totalAvailableToPromise"`
		Date       *time.Time `json:"date,omitempty"`
		Quantity   *float64   `json:"quantity,omitempty"`
		CanPromise *bool      `json:"canPromise,omitempty"`
	}{ProductID: in.ProductID, Locations: []loc{}, Quantity: in.Quantity}
	var b strings.Builder
	anyCan := false
	for _, a := range av {
		l := loc{LocationID: a.LocationID, OnHand: a.OnHand, Reserved: a.Reserved, Available: a.Available, Inbound: a.Inbound, ATP: a.ATP}
		if dated {
			f := byLoc[a.LocationID] // absent: nothing there (ATP 0)
			l.ATP, l.CanPromise, l.EarliestDate = f.Available, f.CanPromise, f.EarliestDate
			if q.Quantity > 0 && l.CanPromise == nil {
				no := false
				l.CanPromise = &no
			}
			if out.Date == nil && !f.Date.IsZero() {
				d := f.Date
				out.Date = &d
			}
		}
		out.Locations = append(out.Locations, l)
		out.TotalAv += a.Available
		out.TotalATP += l.ATP
		fmt.Fprintf(&b, "\n- %s: %s available (%s on hand, %s reserved), %s inbound, %s available to promise",
			a.LocationID, fmtQty(a.Available), fmtQty(a.OnHand), fmtQty(a.Reserved), fmtQty(a.Inbound), fmtQty(l.ATP))
		if l.CanPromise != nil {
			anyCan = anyCan || *l.CanPromise
			switch {
			case *l.CanPromise:
				fmt.Fprintf(&b, "; %s can be promised", fmtQty(q.Quantity))
			case l.EarliestDate != nil:
				fmt.Fprintf(&b, "; %s from %s", fmtQty(q.Quantity), l.EarliestDate.Format("2006-01-02"))
			default:
				fmt.Fprintf(&b, "; %s cannot be promised from known receipts", fmtQty(q.Quantity))
			}
		}
	}
	head := fmt.Sprintf("%s: %s available, %s available to promise across %d location(s)",
		in.ProductID, fmtQty(out.TotalAv), fmtQty(out.TotalATP), len(out.Locations))
	if out.Date != nil {
		head += " by " + out.Date.Format("2006-01-02")
	}
	if q.Quantity > 0 {
		out.CanPromise = &anyCan
		if anyCan {
			head += fmt.Sprintf("; %s can be promised", fmtQty(q.Quantity))
		} else {
			head += fmt.Sprintf("; no single location can promise %s", fmtQty(q.Quantity))
		}
	}
	return out, head + b.String(), nil
}

func listLocations(c *toolCall) (any, string, error) {
	var in struct {
		Query  string `json:"query" max:"200"`
		Limit  *int   `json:"limit"`
		Cursor string `json:"cursor" max:"200"`
	}
	if err := DecodeArgs(c.args, &in); err != nil {
		return nil, "", err
	}
	limit, err := limitArg(in.Limit, 50, 100)
	if err != nil {
		return nil, "", err
	}
	offset, err := parseOffsetCursor(c.name, in.Cursor)
	if err != nil {
		return nil, "", err
	}
	page, err := c.deps.Catalog.ListLocations(c.ctx, c.access.Principal, supplyplan.LocationFilter{Query: in.Query, Limit: limit, Offset: offset})
	if err != nil {
		return nil, "", err
	}
	type locView struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	out := struct {
		Locations  []locView `json:"locations"`
		Total      int       `json:"total"`
		NextCursor string    `json:"nextCursor,omitempty"`
	}{Locations: []locView{}, Total: page.Total}
	var b strings.Builder
	fmt.Fprintf(&b, "%d location(s)", page.Total)
	for _, l := range page.Items {
		out.Locations = append(out.Locations, locView{l.ID, l.Name})
		fmt.Fprintf(&b, "\n- %s: %s", l.ID, l.Name)
	}
	if next := offset + len(page.Items); len(page.Items) > 0 && next < page.Total {
		out.NextCursor = offsetCursor(c.name, next)
	}
	return out, b.String(), nil
}

func getOrderStatus(c *toolCall) (any, string, error) {
	var in struct {
		OrderID string `json:"orderId" max:"200"`
	}
	if err := DecodeArgs(c.args, &in); err != nil {
		return nil, "", err
	}
	if err := requireString("orderId", in.OrderID); err != nil {
		return nil, "", err
	}
	o, err := c.deps.Catalog.GetOrder(c.ctx, c.access.Principal, in.OrderID)
	if err != nil {
		return nil, "", err
	}
	out := struct {
		OrderID   string                 `json:"orderId"`
		Status    string                 `json:"status"`
		Channel   string                 `json:"channel,omitempty"`
		OrderedAt *time.Time             `json:"orderedAt,omitempty"`
		UpdatedAt time.Time              `json:"updatedAt"`
		Lines     []supplyplan.OrderLine `json:"lines"`
	}{OrderID: o.ExternalOrderID, Status: o.Status, Channel: o.Channel, OrderedAt: o.OrderedAt, UpdatedAt: o.UpdatedAt, Lines: o.Lines}
	if out.Lines == nil {
		out.Lines = []supplyplan.OrderLine{}
	}
	return out, fmt.Sprintf("Order %s is %s (%d line(s))", o.ExternalOrderID, o.Status, len(out.Lines)), nil
}
