package http

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// transitionBodies: bodies the fast path reads and bodies it leaves to Decode (escapes, a
// case-variant key, a name of the wrong type or too long, null, errors of every kind).
var transitionBodies = []string{
	`{"name":"fail","payload":{"defects":[{"code":"SCRATCH","quantity":1}]}}`, `{"name":"rework"}`,
	` { "payload" : [ 1 , 2 ] , "name" : "x" , "other" : { "a" : "b" } } `, `{"name":"x","payload":null}`,
	`{"name":"x","payload":"s\"q"}`, `{"name":"n\u0061me"}`, `{"n\u0061me":"x"}`, `{"Name":"x"}`, `{"NAME":"x","name":"y"}`,
	`{"name":null}`, `{"name":5}`, `{"name":["x"]}`, `{"name":"` + strings.Repeat("a", 63) + `"}`, `{"name":"` + strings.Repeat("a", 64) + `"}`,
	`{"name":"é","payload":{}}`, `{}`, ``, `   `, `[]`, `"x"`, `{"name":"x","name":"y"}`, "{\"name\":\"\xff\"}", `{"name":"x"`,
	`{"name":"x"} {}`, `{"name":"x",}`, `{"payload":{"a":1,"a":2},"name":"x"}`, `{"name":"` + strings.Repeat("b", 2000) + `"}`,
	`{"name":"x","payload":{"big":"` + strings.Repeat("c", 300) + `"}}`,
}

// TestDecodeTransitionMatchesDecode: the transition body's fast path answers as Request.Decode
// does on every body: the same name and payload bytes, or the same error.
func TestDecodeTransitionMatchesDecode(t *testing.T) {
	fast := 0
	for _, body := range transitionBodies {
		if checkTransitionBody(t, []byte(body), 1000) {
			fast++
		}
	}
	if fast < 5 {
		t.Fatalf("the fast path read %d bodies", fast)
	}
}

// FuzzDecodeTransition: the same on any body.
func FuzzDecodeTransition(f *testing.F) {
	for _, b := range transitionBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkTransitionBody(t, body, 1000)
	})
}

// checkTransitionBody compares decodeTransitionBody with decodeJSON on body; it reports whether
// the fast path read it.
func checkTransitionBody(t *testing.T, body []byte, limit int) bool {
	t.Helper()
	var want transitionBody
	wantErr := decodeJSON(body, limit, &want)
	got, err := decodeTransitionBody(body, limit)
	if !reflect.DeepEqual(err, wantErr) {
		t.Fatalf("%q: error %v, Decode's %v", body, err, wantErr)
	}
	if err != nil {
		return false
	}
	if got.Name != want.Name || !bytes.Equal(got.Payload, want.Payload) || (got.Payload == nil) != (want.Payload == nil) {
		t.Fatalf("%q: read %q %q, Decode %q %q", body, got.Name, got.Payload, want.Name, want.Payload)
	}
	trimmed := bytes.TrimSpace(body)
	_, _, ok := plainTransition(trimmed)
	return ok && len(trimmed) > 0 && trimmed[0] == '{'
}
