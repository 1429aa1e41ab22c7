package sparkimage

import "strings"

// environ is a process environment as bash imports it: where a name
// repeats, the last value wins.
type environ map[string]string

func parseEnviron(env []string) environ {
	e := environ{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			e[k] = v
		}
	}
	return e
}

// isSet is bash's ${NAME+x}: set, even if empty.
func (e environ) isSet(name string) bool {
	_, ok := e[name]
	return ok
}

// withVar returns env with name set to value, replacing earlier values.
func withVar(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}
