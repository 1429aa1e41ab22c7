package podrunner

import "strings"

// expand replaces $(NAME) in s with lookup(NAME) when lookup knows NAME and
// leaves the reference as written otherwise; $$ is an escaped $. This is
// the kubelet's syntax, as specified by kubernetes
// third_party/forked/golang/expansion/expand.go (v1.37.2): a $ followed by
// anything else, and an unterminated $(, are kept verbatim.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
