package podpatch

import (
	"encoding/json"
	"testing"

	"gomodules.xyz/jsonpatch/v2"
)

// TestEncodeMatchesJSON: Encode writes what json.Marshal writes, values
// held encoded included.
func TestEncodeMatchesJSON(t *testing.T) {
	ops := []jsonpatch.Operation{
		{Operation: "add", Path: "/metadata/labels/a~1b", Value: json.RawMessage(`{"x":[1,2]}`)},
		{Operation: "remove", Path: "/spec/containers/0"},
		{Operation: "replace", Path: "/spec/x", Value: nil},
		{Operation: "add", Path: "/metadata/annotations/q\"\\\u0001é\xff<>&", Value: map[string]any{"k": json.Number("1.5"), "s": "a<b"}},
	}
	got, err := Encode(ops)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("Encode wrote invalid JSON %s: %v", got, err)
	}
	_ = json.Unmarshal(want, &w)
	gs, _ := json.Marshal(g)
	ws, _ := json.Marshal(w)
	if string(gs) != string(ws) {
		t.Errorf("Encode = %s\njson.Marshal = %s", got, want)
	}
	if empty, _ := Encode(nil); string(empty) != "[]" {
		t.Errorf("no ops = %s", empty)
	}
}
