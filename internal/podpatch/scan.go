package podpatch

import "encoding/json"

// The request's pod is read where the diff needs it, without decoding the
// rest: these functions split JSON that json.Unmarshal has already
// accepted into the members of an object and the elements of an array.
// Each value is its own bytes, spaces trimmed.

// member is one member of a JSON object.
type member struct {
	key   string
	value []byte
}

// objectMembers returns the members of the object b, or ok false when b
// is not an object.
func objectMembers(b []byte) (ms []member, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != '}' {
		end := skipString(b, i)
		key, err := unquote(b[i:end])
		if err != nil {
			return nil, false
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // ':'
		end = skipValue(b, i)
		ms = append(ms, member{key, b[i:end]})
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return ms, true
}

// lookup returns the value of key; the last one wins, as when decoding.
func lookup(ms []member, key string) []byte {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return ms[i].value
		}
	}
	return nil
}

// arrayElements returns the elements of the array b, or ok false when b
// is not an array.
func arrayElements(b []byte) (es [][]byte, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	es = [][]byte{}
	for i < len(b) && b[i] != ']' {
		end := skipValue(b, i)
		es = append(es, b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return es, true
}

func unquote(s []byte) (string, error) {
	for _, c := range s[1 : len(s)-1] {
		if c == '\\' {
			var out string
			err := json.Unmarshal(s, &out)
			return out, err
		}
	}
	return string(s[1 : len(s)-1]), nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at i.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value that starts at i.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}
