package importjson

import (
	"bytes"
	"testing"

	"github.com/supplyplan/supplyplan"
	"github.com/supplyplan/supplyplan/internal/strictjson"
)

// The rows split during the strict check are the ones splitArray finds in the checked body, for
// bodies where the array is first, last, absent, not an array, empty, next to other arrays, under
// an escaped key, or beside a case-variant key (split again after the check renames it).
func TestCheckArraySplitsLikeSplitArray(t *testing.T) {
	kind := supplyplan.ImportDemandHistory
	key := kind.ArrayKey()
	row := `{"skuId":"A","locationId":"L1","weekStarting":"2026-11-02","actualDemand":3}`
	bodies := []string{
		`{"` + key + `":[` + row + `]}`,
		`{"` + key + `":[` + row + `,` + row + ` , {"skuId":"[x]","locationId":"L2","weekStarting":"2026-11-09","actualDemand":1.5}]}`,
		` { "` + key + `" : [ ` + row + ` ] , "x" : [1,[2,3]] } `,
		`{"x":[1,2],"y":{"z":[[]]},"` + key + `":[` + row + `]}`,
		`{"` + key + `":[],"x":[1,2]}`,
		`{"` + key + `":{"a":[1]},"x":[1,2]}`,
		`{"` + key + `":null}`,
		`{"x":[1,2]}`,
		`{}`,
		`{"rec\u006frds":[` + row + `,` + row + `]}`,
		`{"` + key + `":[` + row + `],"SKUID":[1]}`,
		`{"` + key + `":[{"skuId":"A","SkuId":"B","locationId":"L","weekStarting":"2026-11-02","actualDemand":1}]}`,
		`{"` + key + `":[1,"two",[3],{"four":4},null,true]}`,
	}
	for _, body := range bodies {
		clean, ignored, err := strictjson.Check([]byte(body), bodyTypes[kind])
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		want, wantArray, wantFound := splitArray(clean, key)
		clean2, ignored2, got, found, isArray, err := strictjson.CheckArray([]byte(body), bodyTypes[kind], key)
		if err != nil || !bytes.Equal(clean, clean2) || len(ignored) != len(ignored2) {
			t.Fatalf("%s: CheckArray %q %v %v, Check %q %v", body, clean2, ignored2, err, clean, ignored)
		}
		if len(ignored) > 0 {
			if got != nil || found || isArray {
				t.Errorf("%s: rows returned though keys were renamed", body)
			}
			continue
		}
		if found != wantFound || isArray != wantArray || len(got) != len(want) {
			t.Fatalf("%s: found %v array %v %d rows, splitArray %v %v %d", body, found, isArray, len(got), wantFound, wantArray, len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: row %d %s, splitArray %s", body, i, got[i], want[i])
			}
		}
	}
	// SplitBody answers as before: rows, or the error naming the array.
	for body, wantErr := range map[string]bool{`{"` + key + `":[` + row + `]}`: false, `{"` + key + `":[],"x":[1]}`: true, `{"x":[1]}`: true,
		`{"` + key + `":{"a":[1]}}`: true} {
		rows, err := SplitBody(kind, []byte(body), 10)
		if (err != nil) != wantErr || !wantErr && len(rows) != 1 {
			t.Errorf("SplitBody %s: %d rows, %v", body, len(rows), err)
		}
	}
}
