package submitargs

import "strings"

// Expand replaces the $(NAME) references in s as the kubelet does in a
// container's command, args and env values (k8s.io/kubernetes
// third_party/forked/golang/expansion, Expand): $(NAME) becomes
// lookup(NAME) when that is defined, and stays as written when not; $$
// is a literal $; a $ before anything else, and an unclosed $(, stay as
// written (and what follows an unclosed $( is read on). unknown lists the names lookup says are defined but whose
// value is not known (known false).
func Expand(s string, lookup func(name string) (value string, defined, known bool)) (out string, unknown []string) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			value, defined, known := lookup(name)
			switch {
			case defined && known:
				b.WriteString(value)
			case defined:
				unknown = append(unknown, name)
				b.WriteString(s[i : i+3+end])
			default:
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
			continue
		}
		b.WriteByte('$')
	}
	return b.String(), unknown
}
