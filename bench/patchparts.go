package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// patchPart is what one part of sparklet's patch costs: its operations'
// JSON bytes, as the webhook sends them before base64. A member split out
// of an operation's value (splitValue) counts no operation of its own.
type patchPart struct {
	name       string
	ops, bytes int
}

// patchParts splits a JSON patch by what it changes: each annotation and
// label by its key, each added container or volume by its name, and the
// rest by its path's first three segments; largest first.
func patchParts(patch []byte) ([]patchPart, error) {
	var ops []json.RawMessage
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, fmt.Errorf("not a JSON patch: %w", err)
	}
	byName := map[string]*patchPart{}
	add := func(name string, ops, bytes int) {
		p := byName[name]
		if p == nil {
			p = &patchPart{name: name}
			byName[name] = p
		}
		p.ops += ops
		p.bytes += bytes
	}
	for _, raw := range ops {
		var op struct {
			Path  string          `json:"path"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(raw, &op); err != nil {
			return nil, fmt.Errorf("a JSON patch operation: %w", err)
		}
		// A whole list of containers or volumes, or a whole map of
		// annotations, is split into its members; the operation's own
		// bytes stay with its path.
		members := splitValue(op.Path, op.Value)
		rest := len(raw) + 1 // its comma
		for _, m := range members {
			add(m.name, 0, m.bytes)
			rest -= m.bytes
		}
		add(partName(op.Path, op.Value), 1, rest)
	}
	parts := make([]patchPart, 0, len(byName))
	for _, p := range byName {
		parts = append(parts, *p)
	}
	slices.SortFunc(parts, func(a, b patchPart) int {
		if a.bytes != b.bytes {
			return b.bytes - a.bytes
		}
		return strings.Compare(a.name, b.name)
	})
	return parts, nil
}

func partName(path string, value json.RawMessage) string {
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := range seg {
		seg[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg[i])
	}
	switch {
	case len(seg) >= 3 && seg[0] == "metadata" && (seg[1] == "annotations" || seg[1] == "labels"):
		return seg[1] + " " + seg[2]
	case len(seg) == 3 && seg[0] == "spec" && isIndex(seg[2]):
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(value, &named) == nil && named.Name != "" {
			return seg[1] + " " + named.Name
		}
	}
	if len(seg) > 3 {
		seg = seg[:3]
	}
	return "/" + strings.Join(seg, "/")
}

// splitValue splits an added list of named objects by name, and an added
// map of annotations or labels by key, each member with its JSON bytes
// and its comma.
func splitValue(path string, value json.RawMessage) []patchPart {
	var members []patchPart
	var list []json.RawMessage
	if json.Unmarshal(value, &list) == nil {
		for _, item := range list {
			var named struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(item, &named) != nil || named.Name == "" {
				return nil
			}
			members = append(members, patchPart{name: path[strings.LastIndex(path, "/")+1:] + " " + named.Name, bytes: len(item) + 1})
		}
		return members
	}
	var m map[string]json.RawMessage
	if (path == "/metadata/annotations" || path == "/metadata/labels") && json.Unmarshal(value, &m) == nil {
		for k, v := range m {
			key, _ := json.Marshal(k)
			members = append(members, patchPart{name: path[len("/metadata/"):] + " " + k, bytes: len(key) + 1 + len(v) + 1})
		}
	}
	return members
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil || s == "-"
}

// reportPatchParts writes the table of a patch's parts.
func reportPatchParts(r *report, what string, patch []byte) error {
	parts, err := patchParts(patch)
	if err != nil {
		return err
	}
	total, ops := 0, 0
	rows := make([]string, 0, len(parts)+1)
	for _, p := range parts {
		total, ops = total+p.bytes, ops+p.ops
		rows = append(rows, fmt.Sprintf("| %s | %d | %d |", p.name, p.ops, p.bytes))
	}
	rows = append(rows, fmt.Sprintf("| **all** | %d | **%d** (%d base64-encoded in the AdmissionReview) |", ops, total, (len(patch)+2)/3*4))
	r.line("What each part of sparklet's patch for %s costs, in the patch's JSON bytes:", what)
	r.line("")
	r.table("| part | operations | bytes |", rows)
	return nil
}
