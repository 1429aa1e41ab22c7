package podpatch

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"gomodules.xyz/jsonpatch/v2"
)

// Encode writes ops as a JSON patch, as json.Marshal does, without
// re-encoding the values Mutate already holds encoded.
func Encode(ops []jsonpatch.Operation) ([]byte, error) {
	return AppendEncode(nil, ops)
}

// AppendEncode is Encode appending to b, which it grows once to about the
// patch's size.
func AppendEncode(b []byte, ops []jsonpatch.Operation) ([]byte, error) {
	size := 2
	for _, op := range ops {
		size += len(op.Path) + 48
		if v, ok := op.Value.(json.RawMessage); ok {
			size += len(v)
		}
	}
	b = slices.Grow(b, size)
	b = append(b, '[')
	for i, op := range ops {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"op":`...)
		b = appendString(b, op.Operation)
		b = append(b, `,"path":`...)
		b = appendString(b, op.Path)
		switch v := op.Value.(type) {
		case json.RawMessage:
			b = append(append(b, `,"value":`...), v...)
		case nil:
			if op.Operation == "add" || op.Operation == "replace" {
				b = append(b, `,"value":null`...)
			}
		default:
			data, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("encode patch value at %s: %w", op.Path, err)
			}
			b = append(append(b, `,"value":`...), data...)
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		i++
	}
	return append(b, '"')
}
