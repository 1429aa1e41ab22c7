package jsonlog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"

	"github.com/sirupsen/logrus"
)

// Formatter is logrus.JSONFormatter with a fast path. An entry the fast
// path does not cover (a field named like a standard key, a caller, or
// an option that changes the layout) goes to the JSONFormatter itself.
type Formatter struct {
	logrus.JSONFormatter
}

// standard are the keys JSONFormatter adds; a field of the same name is
// renamed by it (prefixFieldClashes), which the fast path leaves to it.
var standard = []string{logrus.FieldKeyTime, logrus.FieldKeyMsg, logrus.FieldKeyLevel, logrus.FieldKeyLogrusError,
	logrus.FieldKeyFunc, logrus.FieldKeyFile}

// Format renders e as one JSON object with its keys sorted, and a newline.
func (f *Formatter) Format(e *logrus.Entry) ([]byte, error) {
	if e.Caller != nil || skipped(e) || f.DataKey != "" || len(f.FieldMap) > 0 || f.PrettyPrint || f.DisableTimestamp ||
		f.DisableHTMLEscape || f.TimestampFormat == "" {
		return f.JSONFormatter.Format(e)
	}
	keys := make([]string, 0, len(e.Data)+3)
	for k := range e.Data {
		if slices.Contains(standard, k) {
			return f.JSONFormatter.Format(e)
		}
		keys = append(keys, k)
	}
	keys = append(keys, logrus.FieldKeyTime, logrus.FieldKeyMsg, logrus.FieldKeyLevel)
	slices.Sort(keys)
	out := make([]byte, 0, 256)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendString(out, k)
		out = append(out, ':')
		switch k {
		case logrus.FieldKeyTime:
			out = appendString(out, e.Time.Format(f.TimestampFormat))
		case logrus.FieldKeyMsg:
			out = appendString(out, e.Message)
		case logrus.FieldKeyLevel:
			out = appendString(out, e.Level.String())
		default:
			var ok bool
			if out, ok = appendValue(out, e.Data[k]); !ok {
				return f.JSONFormatter.Format(e)
			}
		}
	}
	out = append(out, "}\n"...)
	b := e.Buffer
	if b == nil {
		b = new(bytes.Buffer)
	}
	b.Write(out)
	return b.Bytes(), nil
}

// errField is logrus.Entry's unexported err: what WithFields left out
// (a func), which JSONFormatter reports as logrus_error.
var errField, hasErrField = reflect.TypeFor[logrus.Entry]().FieldByName("err")

// skipped reports whether logrus left a field of e out; a logrus without
// the field counts as always.
func skipped(e *logrus.Entry) bool {
	if !hasErrField || errField.Type.Kind() != reflect.String {
		return true
	}
	return reflect.ValueOf(e).Elem().FieldByIndex(errField.Index).String() != ""
}

// appendValue appends v as JSONFormatter writes a field's value: an
// error as its message, the rest as encoding/json encodes it.
func appendValue(out []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case string:
		return appendString(out, v), true
	case bool:
		return strconv.AppendBool(out, v), true
	case int:
		return strconv.AppendInt(out, int64(v), 10), true
	case int64:
		return strconv.AppendInt(out, v, 10), true
	case error:
		return appendString(out, v.Error()), true
	}
	data, err := json.Marshal(v)
	return append(out, data...), err == nil
}

// appendString appends s as encoding/json writes a string.
func appendString(out []byte, s string) []byte {
	if plain(s) {
		return strconv.AppendQuote(out, s)
	}
	data, _ := json.Marshal(s) // a string always encodes
	return append(out, data...)
}

// plain reports whether s is printable ASCII that encoding/json writes
// as strconv.Quote does: no quote to escape differently, no <, > or &.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
