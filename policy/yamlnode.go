package policy

import (
	"fmt"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// scanYAML reads the document's node tree, which the JSON conversion
// loses. It refuses keys that appear twice in one mapping, as the API
// server refuses them in an object, and it returns the literal text of
// every scalar value in a Spark conf map by map path and key, so that
// `spark.executor.cores: 4` or `spark.eventLog.enabled: true` becomes the
// string Spark reads, exactly as written ("0.10" stays "0.10"). Aliases
// (*name) are read where they are used, and merge keys (<<: *name, or a
// list of aliases) as YAML 1.1 merges them: the mapping's own keys win,
// then the merged mappings in their order; paths are where the values
// take effect. Parse has refused a document whose aliases expand too far
// ("billion laughs") before, in its YAML to JSON conversion.
func scanYAML(data []byte) (map[string]map[string]string, error) {
	var doc yaml3.Node
	if err := yaml3.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("policy: not valid YAML: %w", err)
	}
	literals := map[string]map[string]string{}
	var problems []string
	var walk func(n *yaml3.Node, path string)
	walk = func(n *yaml3.Node, path string) {
		switch n.Kind {
		case yaml3.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml3.AliasNode:
			walk(n.Alias, path)
		case yaml3.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		case yaml3.MappingNode:
			seen := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Tag == "!!merge" {
					continue
				}
				if line, dup := seen[k.Value]; dup {
					problems = append(problems, fmt.Sprintf("%s: key %q appears twice (lines %d and %d); keep one", orRoot(join(path, k.Value)), k.Value, line, k.Line))
				}
				seen[k.Value] = k.Line
			}
			conf := isConfMap(path)
			for _, kv := range mappingPairs(n) {
				k, v := kv[0], resolve(kv[1])
				if conf && v.Kind == yaml3.ScalarNode && v.Tag != "!!null" {
					if literals[path] == nil {
						literals[path] = map[string]string{}
					}
					literals[path][k.Value] = v.Value
				}
				walk(v, join(path, k.Value))
			}
		}
	}
	walk(&doc, "")
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, &Error{Problems: problems}
	}
	return literals, nil
}

// resolve follows aliases to the node they name.
func resolve(n *yaml3.Node) *yaml3.Node {
	for n.Kind == yaml3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// mappingPairs lists a mapping's key and value nodes as the mapping reads
// once merged: its own keys, then those of each merged mapping (<<) that
// are not there yet, the first merged mapping winning over later ones.
func mappingPairs(n *yaml3.Node) [][2]*yaml3.Node {
	var out [][2]*yaml3.Node
	have := map[string]bool{}
	var merged []*yaml3.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			if v = resolve(v); v.Kind == yaml3.SequenceNode {
				for _, m := range v.Content {
					merged = append(merged, resolve(m))
				}
			} else {
				merged = append(merged, v)
			}
			continue
		}
		if !have[k.Value] {
			have[k.Value] = true
			out = append(out, [2]*yaml3.Node{k, v})
		}
	}
	for _, m := range merged {
		if m.Kind != yaml3.MappingNode {
			continue
		}
		for _, kv := range mappingPairs(m) {
			if !have[kv[0].Value] {
				have[kv[0].Value] = true
				out = append(out, kv)
			}
		}
	}
	return out
}

func orRoot(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

// isConfMap reports whether path is a Spark conf map: spark.defaults,
// spark.enforced, or the same under namespaces.<name>.
func isConfMap(path string) bool {
	rest := path
	if after, ok := strings.CutPrefix(path, "namespaces."); ok {
		_, r, found := strings.Cut(after, ".")
		if !found {
			return false
		}
		rest = r
	}
	return rest == "spark.defaults" || rest == "spark.enforced"
}

// confValuesAsStrings turns the numbers and booleans of the Spark conf
// maps in raw into their literal text, and refuses empty values.
func confValuesAsStrings(raw map[string]any, literals map[string]map[string]string) []string {
	var problems []string
	fix := func(path string, conf any) {
		m, ok := conf.(map[string]any)
		if !ok {
			return
		}
		for k, v := range m {
			switch v.(type) {
			case string:
			case nil:
				problems = append(problems, fmt.Sprintf("%s.%s: no value; write \"\" for an empty one or remove the key", path, k))
			case float64, bool:
				if lit, ok := literals[path][k]; ok {
					m[k] = lit
				}
			default:
				problems = append(problems, fmt.Sprintf("%s.%s: want a string, number or boolean, got %s; Spark reads every value as one string", path, k, JSONKind(v)))
			}
		}
	}
	sections := func(prefix string, obj any) {
		spark, _ := obj.(map[string]any)["spark"].(map[string]any)
		for _, s := range []string{"defaults", "enforced"} {
			if spark != nil {
				fix(join(prefix, "spark."+s), spark[s])
			}
		}
	}
	sections("", raw)
	if nss, ok := raw["namespaces"].(map[string]any); ok {
		for name, ns := range nss {
			if obj, ok := ns.(map[string]any); ok {
				sections("namespaces."+name, obj)
			}
		}
	}
	slices.Sort(problems)
	return problems
}
