//go:build !sidecaronly

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const driverPod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {spark-role: driver}
spec:
  containers: [{name: spark, image: apache/spark:3.5.4, args: [driver, --class, org.apache.spark.examples.SparkPi, local:///opt/spark/examples/jars/spark-examples.jar]}]
`

func pod(name string) string { return strings.Replace(driverPod, "%s", name, 1) }

const plainConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}   # kept as written\ndata: {a: \"1\"}\n"

// kinds lists the kind/name of every object in a YAML stream or a List.
func kinds(t *testing.T, out string) []string {
	t.Helper()
	var names []string
	for _, doc := range strings.Split(out, "\n---\n") {
		var obj struct {
			Kind     string
			Metadata struct{ Name string }
			Items    []json.RawMessage
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		if obj.Kind == "List" {
			for _, it := range obj.Items {
				names = append(names, kinds(t, string(it))...)
			}
			continue
		}
		names = append(names, strings.ToLower(obj.Kind)+"/"+obj.Metadata.Name)
	}
	return names
}

func TestInjectInputsAndReports(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"a/pod.yaml":         pod("pi"),
		"a/settings.yml":     plainConfigMap,
		"a/notes.txt":        "not a manifest",
		"a/nested/more.json": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nested","labels":{"spark-role":"driver"}},"spec":{"containers":[{"name":"spark","image":"apache/spark:3.5.4","args":["driver"]}]}}`,
		"other-ns.yaml":      strings.Replace(pod("elsewhere"), "  name: elsewhere\n", "  name: elsewhere\n  namespace: team-b\n", 1),
		"empty/README":       "nothing here",
	})
	at := func(p string) string { return filepath.Join(dir, p) }
	for _, tc := range []struct {
		name    string
		args    []string
		stdin   string
		code    int
		objects []string // kind/name in output order
		report  []string // lines on stderr, in order
		stdout  string   // substring
		stderr  string   // substring
	}{
		{
			name: "separators followed by comments, and comment-only documents",
			args: []string{"-f", "-"}, stdin: "--- # the driver\n" + pod("pi") + "--- # nothing\n# only a comment\n---\n" + plainConfigMap,
			objects: []string{"pod/pi", "configmap/settings"},
			report:  []string{"pod/pi: injected", "configmap/settings: skipped (a ConfigMap has no pod template)"},
			stdout:  "# kept as written",
		},
		{
			name: "kind List", args: []string{"-f", "-"},
			stdin:   "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(pod("in-list")), "\n", "\n  ") + "\n- {apiVersion: v1, kind: Service, metadata: {name: ui}}\n",
			objects: []string{"pod/in-list", "service/ui"},
			report:  []string{"pod/in-list: injected", "service/ui: skipped (a Service has no pod template)"},
			stdout:  "sparklet-sidecar",
		},
		{
			name: "a directory takes its manifests only, in name order", args: []string{"-f", at("a")},
			objects: []string{"pod/pi", "configmap/settings"},
			report:  []string{"pod/pi: injected", "configmap/settings: skipped (a ConfigMap has no pod template)"},
		},
		{
			name: "-R walks subdirectories", args: []string{"-f", at("a"), "-R"},
			objects: []string{"pod/nested", "pod/pi", "configmap/settings"},
			report:  []string{"pod/nested: injected", "pod/pi: injected", "configmap/settings: skipped (a ConfigMap has no pod template)"},
		},
		{
			name: "repeated -f and a comma list keep their order", args: []string{"-f", at("a/settings.yml") + "," + at("a/pod.yaml"), "-f", "-"}, stdin: pod("stdin"),
			objects: []string{"configmap/settings", "pod/pi", "pod/stdin"},
		},
		{
			name: "-o json of one object is the object", args: []string{"-f", at("a/pod.yaml"), "-o", "json"},
			stdout: `"kind": "Pod"`, report: []string{"pod/pi: injected"},
		},
		{
			name: "-o json of several is a List", args: []string{"-f", at("a"), "-o", "json"},
			stdout: `"kind": "List"`, objects: []string{"pod/pi", "configmap/settings"},
		},
		{
			name: "already injected", args: []string{"-f", "-"}, stdin: "INJECTED",
			report: []string{"pod/pi: skipped (already injected)"},
		},
		{
			name: "not a driver", args: []string{"-f", "-"}, stdin: strings.Replace(pod("web"), "spark-role: driver", "app: web", 1),
			report: []string{"pod/web: skipped (not labelled spark-role=driver)"},
		},
		{
			name: "the object's namespace is kept without -n", args: []string{"-f", at("other-ns.yaml")},
			stdout: "namespace: team-b", report: []string{"pod/elsewhere: injected"},
		},
		{
			name: "-n that contradicts the object", args: []string{"-f", at("other-ns.yaml"), "-n", "team-a"},
			code: exitFailure, stderr: `the namespace from the object ("team-b") does not match --namespace "team-a"`,
		},
		{
			name: "a refusal names the object, and nothing is printed", args: []string{"-f", "../../examples/refused-pod.yaml", "--policy", "../../examples/policy.yaml"},
			code: exitFailure, stderr: "limits.maxExecutors=100",
		},
		{name: "a missing file", args: []string{"-f", at("nope.yaml")}, code: exitFailure, stderr: "no such file or directory"},
		{name: "a directory without manifests", args: []string{"-f", at("empty")}, code: exitFailure, stderr: "no .yaml, .yml or .json files"},
		{name: "stdin twice", args: []string{"-f", "-", "-f", "-"}, code: exitUsage, stderr: "only once"},
		{name: "a document without kind", args: []string{"-f", "-"}, stdin: "metadata: {name: x}\n", code: exitFailure, stderr: "-: document 1: object has no kind"},
		{name: "invalid YAML names the document", args: []string{"-f", "-"}, stdin: plainConfigMap + "---\nkind: [\n", code: exitFailure, stderr: "-: document 2: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdin := tc.stdin
			if stdin == "INJECTED" {
				once, _, code := runCLI(t, pod("pi"), "inject", "-f", "-", "--ignore-cluster", "--log-level=error")
				if code != 0 {
					t.Fatal("first injection failed")
				}
				stdin = once
			}
			args := append([]string{"inject", "--log-level=error"}, tc.args...)
			if !strings.Contains(strings.Join(args, " "), "--policy") {
				args = append(args, "--ignore-cluster")
			}
			stdout, stderr, code := runCLI(t, stdin, args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if code != 0 && stdout != "" {
				t.Errorf("output on failure:\n%s", stdout)
			}
			if tc.objects != nil {
				if got := kinds(t, stdout); strings.Join(got, " ") != strings.Join(tc.objects, " ") {
					t.Errorf("objects %v, want %v", got, tc.objects)
				}
			}
			if tc.report != nil {
				if got := strings.TrimSpace(stderr); got != strings.Join(tc.report, "\n") {
					t.Errorf("report:\n%s\nwant:\n%s", got, strings.Join(tc.report, "\n"))
				}
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}

// Without --policy or --ignore-cluster, inject needs a cluster and says how
// to work without one.
func TestInjectWithoutAClusterSaysHowToWorkOffline(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "missing")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, pod("pi"), "inject", "-f", "-", "--kubeconfig", kubeconfig)
	if code != exitFailure || !strings.Contains(stderr, "work offline with --policy FILE or --ignore-cluster") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestInjectReportsScheduling: inject shows, for a policy that selects
// each batch scheduler, what the scheduler gets.
func TestInjectReportsScheduling(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ policy, want string }{
		{"driver: {defaults: {serviceAccountName: spark-driver}}\nscheduling: {batchScheduler: yunikorn, queue: root.sparklet}\n",
			"pod/pi: scheduling: yunikorn in queue root.sparklet: a gang of the driver (cpu 60m, memory 64Mi) and 2 executors (cpu 1, memory 1408Mi each)"},
		{"driver: {defaults: {serviceAccountName: spark-driver}}\nscheduling: {batchScheduler: kueue, queue: team-a}\n",
			"pod/pi: scheduling: kueue, LocalQueue team-a: the driver (cpu 60m, memory 64Mi) and each executor (cpu 1, memory 1408Mi) are admitted one by one; 2 executors at start"},
	}
	for i, tc := range cases {
		file := filepath.Join(dir, "policy"+string(rune('0'+i))+".yaml")
		if err := os.WriteFile(file, []byte(tc.policy), 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runCLI(t, pod("pi"), "inject", "--policy", file, "-f", "-")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("report %q does not say %q", stderr, tc.want)
		}
		if !strings.Contains(stdout, "sparklet.io/scheduling") {
			t.Errorf("the injected pod has no scheduling annotation:\n%s", stdout)
		}
	}
}
