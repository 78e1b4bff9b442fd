package supplyplan

import (
	"encoding/json"
	"maps"
	"testing"
	"time"
)

func TestRolePermissions(t *testing.T) {
	want := map[Role][]Permission{
		RoleAdmin: {PermForecastRead, PermForecastWrite, PermTransfersRead, PermTransfersWrite, PermTransfersApprove, PermTransfersExecute, PermAlertsRead, PermAlertsWrite, PermWebhooksRead, PermWebhooksWrite,
			PermAllocationRead, PermAllocationWrite, PermAllocationApprove},
		RoleManager: {PermForecastRead, PermForecastWrite, PermTransfersRead, PermTransfersWrite, PermTransfersApprove, PermTransfersExecute,
			PermAllocationRead, PermAllocationWrite, PermAllocationApprove},
		RolePlanner: {PermForecastRead, PermForecastWrite, PermTransfersRead, PermTransfersWrite, PermAllocationRead, PermAllocationWrite},
		RoleViewer:  {PermForecastRead, PermTransfersRead, PermAllocationRead},
	}
	all := want[RoleAdmin]
	for role, perms := range want {
		has := map[Permission]bool{}
		for _, p := range perms {
			has[p] = true
		}
		for _, p := range all {
			if role.Can(p) != has[p] {
				t.Errorf("%s can %s = %v, want %v", role, p, role.Can(p), has[p])
			}
		}
	}
	if err := Authorize(Principal{Platform: true}, PermForecastRead); ErrorCode(err) != ETENANTREQUIRED {
		t.Errorf("platform principal: %v", err)
	}
	if err := Authorize(Principal{Role: RoleViewer}, PermForecastWrite); ErrorCode(err) != EFORBIDDEN {
		t.Errorf("viewer write: %v", err)
	}
}

func TestPlatformStateKeysAndOrgs(t *testing.T) {
	st := NewPlatformState()
	now := time.Now().UTC()
	apply := func(recs []Record) {
		for _, r := range recs {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	creds, recs := st.Bootstrap(now)
	apply(recs)
	if len(st.Orgs) != 1 || len(st.Keys) != 6 || creds.Organization.Slug != DemoSlug {
		t.Fatalf("bootstrap: %d orgs %d keys", len(st.Orgs), len(st.Keys))
	}
	for name, secret := range creds.Keys {
		found := false
		stored := maps.Values(st.Keys)
		if name == CredDemoTool { // tool keys live apart: they never authenticate the REST API
			stored = maps.Values(st.ToolKeys)
		}
		for k := range stored {
			if k.Hash == HashKey(secret) {
				found = true
				if k.Hash == secret {
					t.Errorf("%s stored in clear", name)
				}
			}
		}
		if !found {
			t.Errorf("no stored key for %s", name)
		}
	}
	o, recs, err := st.CreateOrg(OrganizationInput{Name: ptr("A"), Slug: ptr("a")}, now)
	if err != nil {
		t.Fatal(err)
	}
	apply(recs)
	if _, _, err := st.CreateOrg(OrganizationInput{Name: ptr("A2"), Slug: ptr("a")}, now); err == nil {
		t.Fatal("duplicate slug accepted")
	}
	if _, _, err := st.CreateOrg(OrganizationInput{Name: ptr("Squatter"), Slug: ptr(GlobalLoopScope)}, now); ErrorCode(err) != EVALIDATION {
		t.Fatalf("the reserved slug %q: %v, want a validation error", GlobalLoopScope, err)
	}
	k, secret, recs, err := st.CreateKey(o.ID, APIKeyInput{Scopes: &[]string{"import:write", "import:write"}}, now)
	if err != nil || len(k.Scopes) != 1 || k.Role != "" || secret == "" {
		t.Fatalf("scoped key = %+v %v", k, err)
	}
	apply(recs)
	if _, recs, err = st.RevokeKey(o.ID, k.ID, now); err != nil {
		t.Fatal(err)
	}
	apply(recs)
	if st.Keys[k.ID].RevokedAt == nil {
		t.Fatal("key not revoked")
	}
	if _, _, err := st.RevokeKey("other-org", k.ID, now); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("revoke across orgs: %v", err)
	}
	// Records survive the journal encoding.
	b, err := EncodeRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeRecords(b)
	if err != nil || back[0].Value.(*APIKey).RevokedAt == nil {
		t.Fatalf("decode: %+v %v", back, err)
	}
	snap, _ := json.Marshal(st)
	st2 := NewPlatformState()
	if err := json.Unmarshal(snap, st2); err != nil || len(st2.Keys) != len(st.Keys) {
		t.Fatalf("snapshot round trip: %v", err)
	}
}

func TestNewIDSortsByCreation(t *testing.T) {
	prev := NewID("x")
	for i := 0; i < 10000; i++ {
		id := NewID("x")
		if id <= prev {
			t.Fatalf("id %s not after %s", id, prev)
		}
		prev = id
	}
}
