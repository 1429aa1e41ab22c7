package webhook

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ownedByPolicy lists the fields of a user's pod that injection may change,
// each with the reason. Anything else the pod set must come back unchanged
// (TestNothingOfTheUsersReplaced). Paths name list items by their name
// (mounts by their mount path); the patterns match whole paths.
var ownedByPolicy = []struct {
	pattern, reason string
	only            any // when set, the user's value it may replace
}{
	{`metadata\.annotations\[sparklet\.io/effective-conf\]`,
		"written by sparklet; a user's value is replaced with a warning (troubleshooting.md, Annotations)", nil},
	{`spec\.automountServiceAccountToken`,
		"the driver ServiceAccount's token goes to the sidecar alone (policy.md, The service-account token)", nil},
	{`spec\.volumes\[kube-api-access-[a-z0-9]+\](\..*)?`,
		"the API server's token volume is taken out of the pod's containers; the status annotation lists it in removedVolumes", nil},
	{`spec\.(init)?[cC]ontainers\[[^]]+\]\.volumeMounts\[/var/run/secrets/kubernetes\.io/serviceaccount\](\..*)?`,
		"the same token volume, unmounted", nil},
	{`spec\.containers\[[^]]+\]\.env\[SPARK_CONF_DIR\]\.value`,
		"the JVM reads sparklet's conf directory; the conf init container first copies the pod's own SPARK_CONF_DIR there, so its files are kept (configuration-delivery.md)", nil},
	{`spec\.containers\[[^]]+\]\.env\[(NO_PROXY|no_proxy)\]\.(value|valueFrom(\..*)?)`,
		"extended with the sidecar's address so the JVM reaches it without a proxy; the pod's own entries are kept, a valueFrom under SPARKLET_USER_<name> (configuration-delivery.md)", nil},
	{`metadata\.annotations\[(traffic\.sidecar\.istio\.io/(excludeInboundPorts|excludeOutboundIPRanges)|config\.linkerd\.io/(skip-inbound-ports|skip-subnets))\]`,
		"the mesh's exclusion lists: the sidecar's ports and the API server's ranges are appended, the pod's own items kept (meshes.md)", nil},
	{`spec\.serviceAccountName`,
		"only a pod naming \"default\", which the API server fills in for a pod that names none, gets the policy's driver serviceAccountName (policy.md, <pod settings>)", "default"},
	{`metadata\.labels\[spark-app-selector\]`,
		"a pod a Job or CronJob created from its template gets its own application id, since all its pods would share the template's (scheduling.md, troubleshooting.md)", nil},
}

var ownedPatterns = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, o := range ownedByPolicy {
		out = append(out, regexp.MustCompile(`^(`+o.pattern+`)$`))
	}
	return out
}()

// owned tells whether ownedByPolicy lets injection change the user's
// value at path.
func owned(path string, value any) bool {
	for i, re := range ownedPatterns {
		if re.MatchString(path) && (ownedByPolicy[i].only == nil || reflect.DeepEqual(ownedByPolicy[i].only, value)) {
			return true
		}
	}
	return false
}

// TestNothingOfTheUsersReplaced walks every golden input pod and example:
// every label, annotation, env var, volume, mount and container field the
// user set is present unchanged in the injected pod, or the pod is
// refused, or a warning names the field (a value the policy enforces), or
// the field is in ownedByPolicy.
func TestNothingOfTheUsersReplaced(t *testing.T) {
	inputs := map[string][]byte{}
	policies := map[string]string{}
	for _, file := range fixtures(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".pod.yaml")
		inputs[name] = fixtureJSON(t, file)
		policies[name] = "testdata/policy.yaml"
		if own := "testdata/" + name + ".policy.yaml"; fileExists(own) {
			policies[name] = own
		}
	}
	for name, raw := range examplePods(t) {
		inputs[name] = raw
		policies[name] = "../examples/policy.yaml"
	}
	handlers := map[string]*Handler{}
	for name, raw := range inputs {
		t.Run(name, func(t *testing.T) {
			h := handlers[policies[name]]
			if h == nil {
				h = policyHandler(t, policies[name])
				handlers[policies[name]] = h
			}
			out, refused, warnings := admitWithWarnings(t, h, raw)
			if refused != "" {
				return
			}
			var before, after any
			if err := json.Unmarshal(raw, &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &after); err != nil {
				t.Fatal(err)
			}
			for _, p := range replaced(before, after, "") {
				if !owned(p, valueAt(before, p)) && !warned(warnings, p) {
					t.Errorf("%s: the user's value was replaced or dropped without a warning naming it, and the field is not in ownedByPolicy", p)
				}
			}
		})
	}
}

// warned tells whether a warning names the field at path or one that
// holds it.
func warned(warnings []string, path string) bool {
	for _, w := range warnings {
		for p := path; p != ""; p = parentPath(p) {
			if strings.Contains(w, " "+p+" ") {
				return true
			}
		}
	}
	return false
}

// parentPath is path without its last field or item.
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i > 0 {
		return path[:i]
	}
	return ""
}

// replaced lists the paths under path where in has a value that out does
// not keep unchanged. Lists of objects with a name (or, for mounts, a
// mountPath) are matched by it; other lists must keep every item.
func replaced(in, out any, path string) []string {
	switch in := in.(type) {
	case map[string]any:
		o, ok := out.(map[string]any)
		if !ok {
			return []string{path}
		}
		var bad []string
		for k, v := range in {
			ov, ok := o[k]
			if !ok {
				bad = append(bad, fieldPath(path, k))
				continue
			}
			bad = append(bad, replaced(v, ov, fieldPath(path, k))...)
		}
		return bad
	case []any:
		o, ok := out.([]any)
		if !ok {
			return []string{path}
		}
		key := itemKey(in)
		var bad []string
		for i, item := range in {
			if key == "" {
				if !containsValue(o, item) {
					bad = append(bad, fmt.Sprintf("%s[%d]", path, i))
				}
				continue
			}
			id := item.(map[string]any)[key]
			p := fmt.Sprintf("%s[%v]", path, id)
			match := findItem(o, key, id)
			if match == nil {
				bad = append(bad, p)
				continue
			}
			bad = append(bad, replaced(item, match, p)...)
		}
		return bad
	default:
		if !reflect.DeepEqual(in, out) {
			return []string{path}
		}
		return nil
	}
}

// fieldPath names key under path; the keys of labels, annotations and
// the node selector, and keys with dots, go in brackets.
func fieldPath(path, key string) string {
	switch {
	case path == "":
		return key
	case path == "metadata.labels" || path == "metadata.annotations" || path == "spec.nodeSelector" || strings.Contains(key, "."):
		return path + "[" + key + "]"
	}
	return path + "." + key
}

// valueAt is the value of a top-level scalar field at a path replaced
// reports, such as spec.serviceAccountName; nil for others.
func valueAt(obj any, path string) any {
	for _, k := range strings.Split(path, ".") {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil
		}
		obj = m[k]
	}
	return obj
}

// itemKey is the field that names the items of a list: mountPath for
// mounts, name for the rest, "" when the items are not named objects.
func itemKey(list []any) string {
	for _, key := range []string{"mountPath", "name"} {
		all := len(list) > 0
		for _, item := range list {
			m, ok := item.(map[string]any)
			if _, named := m[key]; !ok || !named {
				all = false
			}
		}
		if all {
			return key
		}
	}
	return ""
}

func findItem(list []any, key string, id any) any {
	for _, item := range list {
		if m, ok := item.(map[string]any); ok && reflect.DeepEqual(m[key], id) {
			return item
		}
	}
	return nil
}

func containsValue(list []any, v any) bool {
	for _, item := range list {
		if reflect.DeepEqual(item, v) {
			return true
		}
	}
	return false
}

// examplePods reads the driver pods of examples/, the pod templates of
// its Jobs and CronJobs as pods.
func examplePods(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(data), "\n---") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj == nil {
				continue
			}
			var pod map[string]any
			switch obj["kind"] {
			case "Pod":
				pod = obj
			case "Job":
				pod = dig(obj, "spec", "template")
			case "CronJob":
				pod = dig(obj, "spec", "jobTemplate", "spec", "template")
			}
			if pod == nil {
				continue
			}
			pod["apiVersion"], pod["kind"] = "v1", "Pod"
			raw, err := json.Marshal(pod)
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("examples/%s#%d", filepath.Base(file), i)] = raw
		}
	}
	if len(out) < 5 {
		t.Fatalf("found %d example pods, want at least 5", len(out))
	}
	return out
}

func dig(obj map[string]any, path ...string) map[string]any {
	for _, k := range path {
		next, ok := obj[k].(map[string]any)
		if !ok {
			return nil
		}
		obj = next
	}
	return obj
}
