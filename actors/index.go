package actors

import (
	"sync/atomic"

	"github.com/supplyplan/supplyplan"
)

// platformIndex is an immutable view of the platform state for lock-free reads (authentication
// runs on every request). The platform actor publishes a new one after every change.
type platformIndex struct {
	byHash  map[string]supplyplan.APIKey
	orgs    map[string]supplyplan.Organization
	globals map[string]*supplyplan.ExternalEvent
	globalL []*supplyplan.ExternalEvent
	mcp     mcpIndex
	// gen numbers the indexes a process builds (AuthVersion): a new one per build.
	gen uint64
}

var indexGen atomic.Uint64

func buildIndex(st *supplyplan.PlatformState) *platformIndex {
	ix := &platformIndex{gen: indexGen.Add(1), byHash: make(map[string]supplyplan.APIKey, len(st.Keys)),
		orgs: make(map[string]supplyplan.Organization, len(st.Orgs)), globals: make(map[string]*supplyplan.ExternalEvent, len(st.GlobalEvents))}
	for _, k := range st.Keys {
		if k.RevokedAt == nil {
			ix.byHash[k.Hash] = *k
		}
	}
	for id, o := range st.Orgs {
		ix.orgs[id] = *o
	}
	for id, e := range st.GlobalEvents {
		ix.globals[id] = e
		ix.globalL = append(ix.globalL, e)
	}
	ix.mcp = buildMCPIndex(st)
	return ix
}

// mcpIndex is the part of the published platform index that the registry and the tool service
// read on every request.
type mcpIndex struct {
	toolByHash    map[string]supplyplan.APIKey
	gatewayByHash map[string]supplyplan.APIKey
	bySlug        map[string]string // slug -> org id
	merchants     map[string]supplyplan.MerchantProfile
	listed        []supplyplan.Merchant // sorted by slug
}

func buildMCPIndex(st *supplyplan.PlatformState) mcpIndex {
	ix := mcpIndex{toolByHash: map[string]supplyplan.APIKey{}, gatewayByHash: map[string]supplyplan.APIKey{},
		bySlug: make(map[string]string, len(st.Orgs)), merchants: make(map[string]supplyplan.MerchantProfile, len(st.Merchants))}
	for _, k := range st.ToolKeys {
		if k.RevokedAt == nil {
			ix.toolByHash[k.Hash] = *k
		}
	}
	for _, k := range st.GatewayKeys {
		if k.RevokedAt == nil {
			ix.gatewayByHash[k.Hash] = *k
		}
	}
	for id, o := range st.Orgs {
		ix.bySlug[o.Slug] = id
	}
	for id, p := range st.Merchants {
		ix.merchants[id] = *p
	}
	ix.listed = st.ListedMerchants()
	return ix
}

// globalLookup finds a global event in the published index.
func (c *Core) globalLookup() supplyplan.EventLookup {
	ix := c.index.Load()
	return func(id string) (*supplyplan.ExternalEvent, bool) {
		e, ok := ix.globals[id]
		return e, ok
	}
}

// globalEvents returns the platform's global events (they apply to every series; shared: do not
// modify).
func (c *Core) globalEvents() []*supplyplan.ExternalEvent { return c.index.Load().globalL }
