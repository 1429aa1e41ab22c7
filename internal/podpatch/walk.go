package podpatch

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// walk diffs the typed values o (the pod as decoded) and m (as mutated)
// against a, the JSON that was sent at path (nil when none was), without
// encoding what did not change: it descends through structs, pointers,
// slices of structs and maps with string keys as encoding/json lays them
// out, skips what is deeply equal, and hands the rest to the three-way
// diff encoded. o and m are addressable and both present in the encoded
// pod; map values, which are not, are encoded whole (entries).
func (d *differ) walk(path string, a []byte, o, m reflect.Value) error {
	t := o.Type()
	switch {
	case encodesItself(t):
	case t.Kind() == reflect.Pointer:
		if !o.IsNil() && !m.IsNil() {
			return d.walk(path, a, o.Elem(), m.Elem())
		}
	case t.Kind() == reflect.Struct:
		if obj, ok := objectMembers(a); ok {
			return d.fields(path, obj, o, m)
		}
	case t.Kind() == reflect.Slice && descends(t.Elem()):
		if arr, ok := arrayElements(a); ok && !o.IsNil() && !m.IsNil() {
			return d.elements(path, arr, o, m)
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && !encodesItself(t.Key()):
		if obj, ok := objectMembers(a); ok && !o.IsNil() && !m.IsNil() {
			return d.entries(path, obj, o, m)
		}
	}
	r, err := encode(o)
	if err != nil {
		return err
	}
	mv, err := encode(m)
	if err != nil {
		return err
	}
	return d.encoded(path, a, r, mv)
}

// encoded is member for values still encoded, nil when absent: it decodes
// them only to diff them against a value that was sent. encoding/json
// writes equal values as equal bytes, and an added value goes into the
// patch as it is.
func (d *differ) encoded(path string, a, r, m []byte) error {
	switch {
	case m == nil:
		d.member(path, nil, a != nil, nil, r != nil, nil, false)
	case a == nil:
		if r == nil || !bytes.Equal(r, m) {
			d.op("add", path, json.RawMessage(m))
		}
	case bytes.Equal(r, m):
	default:
		av, err := decode(a)
		if err != nil {
			return err
		}
		mv, err := decode(m)
		if err != nil {
			return err
		}
		var rv any
		if r != nil {
			if rv, err = decode(r); err != nil {
				return err
			}
		}
		d.member(path, av, true, rv, r != nil, mv, true)
	}
	return nil
}

// fields diffs the struct fields that changed, as members of obj.
func (d *differ) fields(path string, obj []member, o, m reflect.Value) error {
	for _, f := range fieldsOf(o.Type()) {
		fo, fm := o.FieldByIndex(f.index), m.FieldByIndex(f.index)
		if same(fo, fm) {
			continue
		}
		p := join(path, f.name)
		a := lookup(obj, f.name)
		oOK, mOK := f.present(fo), f.present(fm)
		if oOK && mOK {
			if err := d.walk(p, a, fo, fm); err != nil {
				return err
			}
			continue
		}
		var r, mv []byte
		var err error
		if oOK {
			if r, err = encode(fo); err != nil {
				return err
			}
		}
		if mOK {
			if mv, err = encode(fm); err != nil {
				return err
			}
		}
		if err := d.encoded(p, a, r, mv); err != nil {
			return err
		}
	}
	return nil
}

// entries diffs two maps with string keys (labels, annotations, resource
// lists), key by key as members of obj: only the values that changed are
// encoded, and only those sent are decoded.
func (d *differ) entries(path string, obj []member, o, m reflect.Value) error {
	for it := m.MapRange(); it.Next(); {
		ov := o.MapIndex(it.Key())
		if ov.IsValid() && same(ov, it.Value()) {
			continue
		}
		var r []byte
		var err error
		if ov.IsValid() {
			if r, err = encode(ov); err != nil {
				return err
			}
		}
		mv, err := encode(it.Value())
		if err != nil {
			return err
		}
		key := it.Key().String()
		if err := d.encoded(join(path, key), lookup(obj, key), r, mv); err != nil {
			return err
		}
	}
	for i, mb := range obj {
		k := reflect.ValueOf(mb.key).Convert(m.Type().Key())
		if m.MapIndex(k).IsValid() || lookup(obj[i+1:], mb.key) != nil {
			continue // kept, or sent again later (the last one counts)
		}
		var r []byte
		if ov := o.MapIndex(k); ov.IsValid() {
			var err error
			if r, err = encode(ov); err != nil {
				return err
			}
		}
		if err := d.encoded(join(path, mb.key), mb.value, r, nil); err != nil {
			return err
		}
	}
	return nil
}

// elements diffs two slices, element by element where both have one, as
// three does for arrays.
func (d *differ) elements(path string, arr [][]byte, o, m reflect.Value) error {
	lo, lm := o.Len(), m.Len()
	n := min(len(arr), lm)
	for i := len(arr) - 1; i >= n; i-- {
		if i < lo {
			d.op("remove", index(path, i), nil)
		}
	}
	for i := n; i < lm; i++ {
		var r []byte
		if i < lo {
			var err error
			if r, err = encode(o.Index(i)); err != nil {
				return err
			}
		}
		mv, err := encode(m.Index(i))
		if err != nil {
			return err
		}
		if err := d.encoded(index(path, i), nil, r, mv); err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		ei, em := o.Index(i), m.Index(i)
		if i >= lo {
			mv, err := encode(em)
			if err != nil {
				return err
			}
			if err := d.encoded(index(path, i), arr[i], nil, mv); err != nil {
				return err
			}
			continue
		}
		if same(ei, em) {
			continue
		}
		if err := d.walk(index(path, i), arr[i], ei, em); err != nil {
			return err
		}
	}
	return nil
}

// encode is v as encoding/json encodes it inside the pod.
func encode(v reflect.Value) ([]byte, error) {
	if v.CanAddr() {
		v = v.Addr()
	}
	data, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	return data, nil
}

func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

var selfEncoding sync.Map // reflect.Type -> bool

// encodesItself reports whether encoding/json hands t to its own
// MarshalJSON or MarshalText.
func encodesItself(t reflect.Type) bool {
	if v, ok := selfEncoding.Load(t); ok {
		return v.(bool)
	}
	pt := reflect.PointerTo(t)
	self := t.Implements(marshalerType) || pt.Implements(marshalerType) ||
		t.Implements(textMarshalerType) || pt.Implements(textMarshalerType)
	selfEncoding.Store(t, self)
	return self
}

// descends reports whether walk looks inside values of type t.
func descends(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && !encodesItself(t)
}

// field is one JSON member of a struct as encoding/json encodes it.
type field struct {
	name      string
	index     []int
	omitEmpty bool
	omitZero  bool
}

// present reports whether encoding/json writes the field.
func (f field) present(v reflect.Value) bool {
	if f.omitZero && isZero(v) {
		return false
	}
	if !f.omitEmpty {
		return true
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() != 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return !v.IsZero()
	}
	return true
}

type isZeroer interface{ IsZero() bool }

// isZero is omitzero's test: the type's own IsZero when it has one.
func isZero(v reflect.Value) bool {
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		return true
	}
	if z, ok := v.Interface().(isZeroer); ok {
		return z.IsZero()
	}
	if v.CanAddr() {
		if z, ok := v.Addr().Interface().(isZeroer); ok {
			return z.IsZero()
		}
	}
	return v.IsZero()
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf lists t's JSON members, with embedded structs that have no JSON
// name (k8s's `json:",inline"`) flattened into their parent.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	fs := appendFields(nil, t, nil)
	fieldCache.Store(t, fs)
	return fs
}

func appendFields(fs []field, t reflect.Type, index []int) []field {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" || (!sf.IsExported() && !sf.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		idx := append(append([]int(nil), index...), i)
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			fs = appendFields(fs, sf.Type, idx)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := field{name: name, index: idx}
		for _, o := range strings.Split(opts, ",") {
			f.omitEmpty = f.omitEmpty || o == "omitempty"
			f.omitZero = f.omitZero || o == "omitzero"
		}
		fs = append(fs, f)
	}
	return fs
}
