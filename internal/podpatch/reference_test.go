package podpatch_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/internal/podpatch"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

// reference is the patch by definition: the diff from raw to the mutated
// pod, less the diff from raw to the pod merely decoded and re-encoded.
// Mutate must give the same ops while diffing only what changed.
func reference(t *testing.T, raw []byte, mutate func(*corev1.Pod) error) []string {
	t.Helper()
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	roundTrip, _ := json.Marshal(&pod)
	if err := mutate(&pod); err != nil {
		t.Fatal(err)
	}
	mutated, _ := json.Marshal(&pod)
	ops, err := jsonpatch.CreatePatch(raw, mutated)
	if err != nil {
		t.Fatal(err)
	}
	lost, err := jsonpatch.CreatePatch(raw, roundTrip)
	if err != nil {
		t.Fatal(err)
	}
	var out []jsonpatch.Operation
	for _, op := range ops {
		if !slices.ContainsFunc(lost, func(l jsonpatch.Operation) bool { return l.Json() == op.Json() }) {
			out = append(out, op)
		}
	}
	return opStrings(t, out)
}

// mutations change pods in the ways that stress the diff: members added
// to and removed from objects, arrays grown and shrunk, pointers set and
// cleared, and values that encode themselves.
var mutations = map[string]func(*corev1.Pod) error{
	"nothing": func(*corev1.Pod) error { return nil },
	"labels": func(p *corev1.Pod) error {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["a/b~c"] = "x"
		delete(p.Labels, "spark-role")
		return nil
	},
	"annotations cleared": func(p *corev1.Pod) error { p.Annotations = nil; return nil },
	"env grown": func(p *corev1.Pod) error {
		c := &p.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "X", Value: "1"}, corev1.EnvVar{Name: "Y", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
		return nil
	},
	"containers shrunk": func(p *corev1.Pod) error { p.Spec.Containers = p.Spec.Containers[:1]; return nil },
	"container prepended": func(p *corev1.Pod) error {
		p.Spec.Containers = append([]corev1.Container{{Name: "first", Image: "i"}}, p.Spec.Containers...)
		return nil
	},
	"resources": func(p *corev1.Pod) error {
		c := &p.Spec.Containers[len(p.Spec.Containers)-1]
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}
		return nil
	},
	"pointers": func(p *corev1.Pod) error {
		no := false
		p.Spec.AutomountServiceAccountToken = &no
		p.Spec.SecurityContext = nil
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: &no}
		return nil
	},
	"name and status": func(p *corev1.Pod) error {
		p.GenerateName = p.Name + "-"
		p.Name = ""
		p.Status.Phase = corev1.PodPending
		return nil
	},
	"init containers and volumes": func(p *corev1.Pod) error {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init", Image: "i", Args: []string{"a"}})
		p.Spec.Volumes = append([]corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, p.Spec.Volumes...)
		return nil
	},
}

func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../../webhook/testdata/*.pod.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := map[string][]byte{
		// Members our Pod type does not know, at several depths, and
		// members that decode to their zero value.
		"unknown": []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"spark-role":"driver"},"annotations":{},"future":1},
"spec":{"someFutureField":{"x":1},"nodeSelector":null,"containers":[{"name":"c","image":"i","futureContainerField":true,"env":[{"name":"E","value":"v","futureEnv":[1,2]}],"resources":{}},
{"name":"d","image":"i","ports":[{"containerPort":80,"futurePort":"x"}]}]},"status":{}}`),
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".pod.yaml")] = raw
	}
	return out
}

// opStrings encodes ops with their values' members in one order, so that
// equal ops compare equal however their values were encoded.
func opStrings(t *testing.T, ops []jsonpatch.Operation) []string {
	var out []string
	for _, op := range ops {
		var v any
		if err := json.Unmarshal([]byte(op.Json()), &v); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(v)
		out = append(out, string(data))
	}
	return out
}

// sameOps compares as sets (members of an object come in map order) and
// then the order of the ops on each array, which matters.
func sameOps(t *testing.T, got, want []string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("ops differ from the reference\n got: %v\nwant: %v", got, want)
	}
	arrayOps := func(ops []string) []string {
		var out []string
		for _, op := range ops {
			if _, last := split(op); (strings.Contains(op, `"op":"remove"`) || strings.Contains(op, `"op":"add"`)) && isIndex(last) {
				out = append(out, op)
			}
		}
		return out
	}
	// Removes and adds on one array keep their relative order.
	wo, gotOrder := arrayOps(want), arrayOps(got)
	for i := range wo {
		for j := i + 1; j < len(wo); j++ {
			if pi, _ := split(wo[i]); pi != first(split(wo[j])) {
				continue
			}
			if slices.Index(gotOrder, wo[i]) > slices.Index(gotOrder, wo[j]) {
				t.Errorf("ops on one array out of order: %s before %s", wo[j], wo[i])
			}
		}
	}
}

// split returns an op's parent path and last segment.
func split(op string) (parent, last string) {
	var o struct{ Path string }
	_ = json.Unmarshal([]byte(op), &o)
	i := strings.LastIndex(o.Path, "/")
	return o.Path[:i], o.Path[i+1:]
}

func first(a, _ string) string { return a }

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func TestMutateMatchesReference(t *testing.T) {
	for name, raw := range fixtures(t) {
		for mname, mutate := range mutations {
			t.Run(name+"/"+mname, func(t *testing.T) {
				ops, err := podpatch.Mutate(raw, mutate)
				if err != nil {
					t.Fatal(err)
				}
				sameOps(t, opStrings(t, ops), reference(t, raw, mutate))
			})
		}
	}
}

// TestDriverMatchesReference runs the real driver injection.
func TestDriverMatchesReference(t *testing.T) {
	data, err := os.ReadFile("../../webhook/testdata/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(data, "dev")
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			inject := func(p *corev1.Pod) error {
				_, err := patches.Driver(p, patches.Input{Namespace: "spark-jobs", Policy: pol.For("spark-jobs"), Version: "dev", AppID: "spark-0123456789abcdef"})
				var refused *patches.Refused
				if errors.As(err, &refused) {
					return nil
				}
				return err
			}
			ops, err := podpatch.Mutate(raw, inject)
			if err != nil {
				t.Fatal(err)
			}
			sameOps(t, opStrings(t, ops), reference(t, raw, inject))
		})
	}
}

// FuzzMutateMatchesReference: for any pod JSON, Mutate's ops are the
// reference's (spacing, escapes, duplicate and differently cased keys,
// members our types do not know).
func FuzzMutateMatchesReference(f *testing.F) {
	for _, raw := range fixtures(f) {
		f.Add(raw)
	}
	f.Add([]byte(`{"Spec":{"containers":[{"name":"c"}]},"spec":{"containers":[{"name":"d","x":[1,"]"]}]} , "metadata" : {"labels":{"a\u002fb":"\"q\""}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var pod corev1.Pod
		if json.Unmarshal(raw, &pod) != nil || len(pod.Spec.Containers) == 0 {
			return
		}
		for name, mutate := range mutations {
			ops, err := podpatch.Mutate(raw, mutate)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sameOps(t, opStrings(t, ops), reference(t, raw, mutate))
		}
	})
}
