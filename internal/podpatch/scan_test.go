package podpatch

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestScanMatchesDecoding: the members and elements the scanner finds are
// those encoding/json decodes, with the last of duplicate keys winning.
func TestScanMatchesDecoding(t *testing.T) {
	docs := []string{
		`{}`, ` { "a" : 1 , "b":[ ] } `, `{"a":"x\"}]","b\u0041":{"c":[1,{"d":"]"}]},"a":true}`,
		`{"s":"\\","n":-1.5e3,"z":null,"o":{"p":[[],[{}]]}}`, "{\n\t\"k\"\r:\n\"v\"\n}",
	}
	for _, doc := range docs {
		ms, ok := objectMembers([]byte(doc))
		if !ok {
			t.Fatalf("%s: not an object", doc)
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range ms {
			seen[m.key] = true
		}
		if len(seen) != len(want) {
			t.Errorf("%s: keys %v, want %d", doc, seen, len(want))
		}
		for k, v := range want {
			if got := lookup(ms, k); !bytes.Equal(got, bytes.TrimSpace(v)) {
				t.Errorf("%s: %s = %q, want %q", doc, k, got, v)
			}
		}
	}
	es, ok := arrayElements([]byte(` [ 1 , "a,]" , {"b":[2]} , [] ] `))
	if !ok || len(es) != 4 || string(es[1]) != `"a,]"` || string(es[2]) != `{"b":[2]}` || string(es[3]) != `[]` {
		t.Errorf("elements = %q", es)
	}
	if es, ok := arrayElements([]byte(`[]`)); !ok || len(es) != 0 {
		t.Errorf("empty array = %q, %v", es, ok)
	}
	if _, ok := objectMembers([]byte(`[1]`)); ok {
		t.Error("an array scanned as an object")
	}
	if _, ok := arrayElements([]byte(`null`)); ok {
		t.Error("null scanned as an array")
	}
}
