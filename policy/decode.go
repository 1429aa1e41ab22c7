package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Parse decodes a policy document strictly, fills in defaults and validates
// it. Every error names the offending field by its path. version is the
// running sparklet's, whose image is the default sidecar image.
func Parse(data []byte, version string) (*Policy, error) {
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("policy: not valid YAML: %w", err)
	}
	var raw any
	if err := json.Unmarshal(jsonData, &raw); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if raw == nil {
		raw = map[string]any{}
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("policy: the document must be a mapping, got %s", JSONKind(raw))
	}
	literals, err := scanYAML(data)
	if err != nil {
		return nil, err
	}
	for k := range obj {
		if strings.HasPrefix(k, extensionPrefix) {
			delete(obj, k)
		}
	}
	confErrs := confValuesAsStrings(obj, literals)
	if jsonData, err = json.Marshal(obj); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if errs := mergeProblems(confErrs, checkFields(obj, reflect.TypeOf(Policy{}), "")); len(errs) > 0 {
		return nil, &Error{Problems: errs}
	}
	p := &Policy{}
	if err := json.Unmarshal(jsonData, p); err != nil {
		return nil, fmt.Errorf("policy: %s", describeTypeError(err))
	}
	p.setDefaults(version)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// extensionPrefix starts the top-level keys the policy ignores, as Compose
// files do, so that YAML anchors have a place of their own
// (x-common: &common ...).
const extensionPrefix = "x-"

// mergeProblems adds to the conf maps' problems those of checkFields that
// are about other paths, sorted.
func mergeProblems(conf, fields []string) []string {
	out := slices.Clone(conf)
	for _, f := range fields {
		at, _, _ := strings.Cut(f, ": ")
		if !slices.ContainsFunc(conf, func(c string) bool { return strings.HasPrefix(c, at+": ") }) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

var jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// checkFields walks a decoded JSON value against the Go type it will be
// decoded into and reports, by path, every key the type does not have and
// every value its type's own decoder refuses.
func checkFields(v any, t reflect.Type, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		// Quantities, int-or-string, times: decode here to name the field.
		data, _ := json.Marshal(v)
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(data); err != nil {
			return []string{fmt.Sprintf("%s: %s is not valid: %v", path, data, err)}
		}
		return nil
	}
	if v == nil {
		return nil // null is the zero value
	}
	if want := jsonKindOf(t); want != "" && JSONKind(v) != want && !(want == "a number" && isNumber(v)) {
		return []string{fmt.Sprintf("%s: want %s, got %s", orRoot(path), want, JSONKind(v))}
	}
	if f, ok := v.(float64); ok && isInteger(t) && f != float64(int64(f)) {
		return []string{fmt.Sprintf("%s: want a whole number, got %v", orRoot(path), f)}
	}
	var errs []string
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		fields := jsonFields(t)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			ft, ok := fields[k]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s: unknown field (known fields: %s)", join(path, k), knownNames(fields)))
				continue
			}
			errs = append(errs, checkFields(obj[k], ft, join(path, k))...)
		}
	case reflect.Map:
		if obj, ok := v.(map[string]any); ok {
			for k, e := range obj {
				errs = append(errs, checkFields(e, t.Elem(), join(path, k))...)
			}
		}
	case reflect.Slice:
		if list, ok := v.([]any); ok {
			for i, e := range list {
				errs = append(errs, checkFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	slices.Sort(errs)
	return errs
}

// jsonKindOf is the JSON kind a Go type decodes from, as JSONKind names
// it, or "" for any.
func jsonKindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string" // base64, as encoding/json reads []byte
		}
		return "a list"
	}
	return ""
}

func isNumber(v any) bool { _, ok := v.(float64); return ok }

func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// jsonFields maps JSON names to field types, following inlined structs.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func knownNames(fields map[string]reflect.Type) string {
	return strings.Join(slices.Sorted(maps.Keys(fields)), ", ")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// JSONKind names the kind of a decoded JSON value for an error message:
// "a list", "a string", "a number", "a boolean" or "a mapping".
func JSONKind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

// describeTypeError turns encoding/json's type errors into "field: problem".
func describeTypeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: expected %s, got a JSON %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}

// Error is an invalid policy: every problem found, each prefixed with the
// path of its field.
type Error struct{ Problems []string }

func (e *Error) Error() string { return "policy: " + strings.Join(e.Problems, "; ") }

// Problems lists an error from Parse one problem per entry.
func Problems(err error) []string {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Problems
	}
	return []string{strings.TrimPrefix(err.Error(), "policy: ")}
}
