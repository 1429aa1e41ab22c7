package podpatch

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
)

// differ collects the ops of a three-way diff between decoded JSON values:
// a is the pod as sent, r its round trip through our Pod type (what it
// would be had nothing changed) and m the mutated pod. The ops are those
// of jsonpatch.CreatePatch(a, m) less those of jsonpatch.CreatePatch(a, r),
// in CreatePatch's order, computed in one walk: where r and m agree, the
// two diffs agree too and the subtree is skipped.
//
// Values are as json.Decoder with UseNumber decodes them: map[string]any,
// []any, string, json.Number, bool and nil.
type differ struct {
	ops []jsonpatch.Operation
}

func (d *differ) op(op, path string, value any) {
	d.ops = append(d.ops, jsonpatch.Operation{Operation: op, Path: path, Value: value})
}

// member diffs one object member (or the whole document): each of a, r
// and m is present or not.
func (d *differ) member(path string, a any, aOK bool, r any, rOK bool, m any, mOK bool) {
	switch {
	case !mOK:
		// Removed from a; the round trip removing it too makes it an
		// artefact, such as a field our Pod type does not know.
		if aOK && rOK {
			d.op("remove", path, nil)
		}
	case !aOK:
		// Added; an artefact when the round trip adds the same value,
		// such as `status: {}`.
		if !rOK || !equal(r, m) {
			d.op("add", path, m)
		}
	case !rOK:
		d.values(path, a, m)
	default:
		d.three(path, a, r, m)
	}
}

// three diffs a to m, leaving out what a to r has too.
func (d *differ) three(path string, a, r, m any) {
	if equal(r, m) {
		return
	}
	ta, tm := reflect.TypeOf(a), reflect.TypeOf(m)
	if ta != tm || ta != reflect.TypeOf(r) {
		// A replace at path is not in a to r (r differs from m), and
		// neither is anything below it.
		d.values(path, a, m)
		return
	}
	switch at := a.(type) {
	case map[string]any:
		rt, mt := r.(map[string]any), m.(map[string]any)
		for k, mv := range mt {
			av, aOK := at[k]
			rv, rOK := rt[k]
			d.member(join(path, k), av, aOK, rv, rOK, mv, true)
		}
		for k, av := range at {
			if _, ok := mt[k]; !ok {
				rv, rOK := rt[k]
				d.member(join(path, k), av, true, rv, rOK, nil, false)
			}
		}
	case []any:
		rt, mt := r.([]any), m.([]any)
		n := min(len(at), len(mt))
		for i := len(at) - 1; i >= n; i-- {
			if i < len(rt) {
				d.op("remove", index(path, i), nil)
			}
		}
		for i := n; i < len(mt); i++ {
			if i >= len(rt) || !equal(rt[i], mt[i]) {
				d.op("add", index(path, i), mt[i])
			}
		}
		for i := 0; i < n; i++ {
			if i < len(rt) {
				d.three(index(path, i), at[i], rt[i], mt[i])
			} else {
				d.values(index(path, i), at[i], mt[i])
			}
		}
	default:
		d.values(path, a, m)
	}
}

// values is the plain two-way diff from a to m, as jsonpatch.CreatePatch
// computes it.
func (d *differ) values(path string, a, m any) {
	ta, tm := reflect.TypeOf(a), reflect.TypeOf(m)
	if ta != tm {
		d.op("replace", path, m)
		return
	}
	switch at := a.(type) {
	case nil:
	case map[string]any:
		mt := m.(map[string]any)
		for k, mv := range mt {
			if av, ok := at[k]; ok {
				d.values(join(path, k), av, mv)
			} else {
				d.op("add", join(path, k), mv)
			}
		}
		for k := range at {
			if _, ok := mt[k]; !ok {
				d.op("remove", join(path, k), nil)
			}
		}
	case []any:
		mt := m.([]any)
		n := min(len(at), len(mt))
		for i := len(at) - 1; i >= n; i-- {
			d.op("remove", index(path, i), nil)
		}
		for i := n; i < len(mt); i++ {
			d.op("add", index(path, i), mt[i])
		}
		for i := 0; i < n; i++ {
			d.values(index(path, i), at[i], mt[i])
		}
	default:
		if a != m {
			d.op("replace", path, m)
		}
	}
}

// equal reports whether two decoded JSON values are the same JSON.
func equal(a, b any) bool {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for k, av := range at {
			bv, ok := bt[k]
			if !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bt, ok := b.([]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for i := range at {
			if !equal(at[i], bt[i]) {
				return false
			}
		}
		return true
	case string, json.Number, bool, nil:
		return a == b
	}
	return false
}

// pointerEscaper escapes an object key for a JSON pointer (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// join appends an object key to a JSON pointer.
func join(path, key string) string {
	if strings.ContainsAny(key, "~/") {
		key = pointerEscaper.Replace(key)
	}
	return path + "/" + key
}

func index(path string, i int) string { return path + "/" + strconv.Itoa(i) }
