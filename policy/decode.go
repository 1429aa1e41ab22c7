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
	if errs := confValuesAsStrings(obj, literals); len(errs) > 0 {
		return nil, &Error{Problems: errs}
	}
	if jsonData, err = json.Marshal(obj); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if errs := checkFields(raw, reflect.TypeOf(Policy{}), ""); len(errs) > 0 {
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
	var errs []string
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil // a type error, reported by the decoder
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
