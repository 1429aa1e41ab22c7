package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	patchops "gomodules.xyz/jsonpatch/v2"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/internal/podpatch"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

// Options are the inputs besides the documents themselves.
type Options struct {
	Policy *policy.Policy
	// Namespace is used for objects that name none; "default" if empty.
	// An object that names another namespace is an error, as in kubectl.
	Namespace string
	// NamespaceExplicit says Namespace came from -n, so a different
	// namespace in an object is an error rather than the object's own.
	NamespaceExplicit bool
	Version           string
	// AppID, when set, replaces the generated application id.
	AppID string
	// Output is "yaml" (the default) or "json".
	Output string
	// Report, when set, gets one line per object: "kind/name: injected",
	// "kind/name: skipped (reason)" or "kind/name: refused (reason)".
	Report io.Writer
}

// Input is one named source of documents: a file name or "-".
type Input struct {
	Name string
	R    io.Reader
}

// templatePaths is where each workload kind keeps its pod template.
var templatePaths = map[string][]string{
	"Job":         {"spec", "template"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template"},
	"Deployment":  {"spec", "template"},
	"StatefulSet": {"spec", "template"},
	"ReplicaSet":  {"spec", "template"},
	"DaemonSet":   {"spec", "template"},
}

// Run reads YAML documents from r and writes them to w, with driver pods and
// driver pod templates injected. Other documents pass through unchanged.
func Run(r io.Reader, w io.Writer, opts Options) error {
	return RunInputs([]Input{{Name: "-", R: r}}, w, opts)
}

// RunInputs injects every object of every input and writes the result to
// w. A refused object is reported and the run goes on, so that every
// refusal is shown; then nothing is written and the error lists them.
func RunInputs(inputs []Input, w io.Writer, opts Options) error {
	switch opts.Output {
	case "", "yaml", "json":
	default:
		return fmt.Errorf("--output must be yaml or json, got %q", opts.Output)
	}
	var outs []output
	var refusals []string
	for _, in := range inputs {
		docs, err := splitDocuments(in.R)
		if err != nil {
			return fmt.Errorf("%s: %w", in.Name, err)
		}
		for i, doc := range docs {
			at := fmt.Sprintf("%s: document %d", in.Name, i+1)
			out, refused, err := injectDocument(doc, opts)
			if err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			for _, r := range refused {
				refusals = append(refusals, at+": "+r)
			}
			if out != nil {
				outs = append(outs, *out)
			}
		}
	}
	if len(refusals) > 0 {
		return errors.New(strings.Join(refusals, "\n"))
	}
	if opts.Output == "json" {
		return writeJSON(w, outs)
	}
	return writeYAML(w, outs)
}

// output is one top-level document: its original bytes when nothing in it
// changed (comments survive), else the object to marshal.
type output struct {
	raw     []byte
	obj     map[string]any
	changed bool
}

func writeYAML(w io.Writer, outs []output) error {
	for i, o := range outs {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		b := o.raw
		if o.changed {
			var err error
			if b, err = yaml.Marshal(o.obj); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// writeJSON writes one object as itself and several as a v1 List, as
// `kubectl get -o json` does.
func writeJSON(w io.Writer, outs []output) error {
	var v any
	if len(outs) == 1 {
		v = outs[0].obj
	} else {
		items := make([]any, 0, len(outs))
		for _, o := range outs {
			items = append(items, o.obj)
		}
		v = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}, "items": items}
	}
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// injectDocument handles one document: a single object or a List of them.
// It returns nil for a document that holds nothing (only comments).
func injectDocument(doc []byte, opts Options) (*output, []string, error) {
	jsonDoc, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var v any
	if err := json.Unmarshal(jsonDoc, &v); err != nil {
		return nil, nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if v == nil {
		return nil, nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("want an object with apiVersion and kind, got %s", policy.JSONKind(v))
	}
	kind, _ := obj["kind"].(string)
	if kind == "" {
		return nil, nil, errors.New("object has no kind; every document needs apiVersion and kind")
	}
	out := &output{raw: doc, obj: obj}
	if items, isList := obj["items"].([]any); isList && strings.HasSuffix(kind, "List") {
		var refused []string
		for i, it := range items {
			item, ok := it.(map[string]any)
			if !ok {
				return nil, nil, fmt.Errorf("items[%d]: want an object, got %s", i, policy.JSONKind(it))
			}
			changed, refusal, err := injectObject(item, opts)
			if err != nil {
				return nil, nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			if refusal != "" {
				refused = append(refused, fmt.Sprintf("items[%d]: %s", i, refusal))
			}
			out.changed = out.changed || changed
		}
		return out, refused, nil
	}
	changed, refusal, err := injectObject(obj, opts)
	if err != nil || refusal != "" {
		return nil, nonEmpty(refusal), err
	}
	out.changed = changed
	return out, nil, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// injectObject injects obj in place when it is a driver pod or holds a
// driver pod template, and reports the outcome. A refusal comes back as
// its message.
func injectObject(obj map[string]any, opts Options) (changed bool, refusal string, err error) {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name := describe(kind, meta)
	ns, err := namespaceOf(name, meta, opts)
	if err != nil {
		return false, "", err
	}
	skip := func(reason string) (bool, string, error) {
		opts.report("%s: skipped (%s)", name, reason)
		return false, "", nil
	}
	podObj, tmpl, noPod := podIn(obj, kind)
	if noPod != "" {
		return skip(noPod)
	}
	raw, err := json.Marshal(podObj)
	if err != nil {
		return false, "", err
	}
	ops, res, sched, err := mutateDriver(raw, ns, kind != "Pod", opts)
	if err != nil {
		opts.report("%s: refused (%v)", name, err)
		return false, fmt.Sprintf("%s: %v", name, err), nil
	}
	for _, w := range res.Warnings {
		opts.report("%s: warning: %s", name, w)
	}
	if res.Skipped != nil {
		return skip(res.Skipped.Message)
	}
	if len(ops) == 0 {
		return skip("already injected")
	}
	patchedPod, err := applyOps(name, raw, ops)
	if err != nil {
		return false, "", err
	}
	if kind == "Pod" {
		for k := range obj {
			delete(obj, k)
		}
		for k, v := range patchedPod {
			obj[k] = v
		}
	} else {
		tmpl["metadata"] = patchedPod["metadata"]
		tmpl["spec"] = patchedPod["spec"]
	}
	opts.report("%s: injected", name)
	if sched != "" {
		opts.report("%s: scheduling: %s", name, sched)
	}
	return true, "", nil
}

// namespaceOf is the namespace an object is injected for: its own, else
// --namespace, else "default". An object naming another namespace than an
// explicit --namespace is an error, as in kubectl.
func namespaceOf(name string, meta map[string]any, opts Options) (string, error) {
	ns := opts.Namespace
	if v, _ := meta["namespace"].(string); v != "" {
		if opts.NamespaceExplicit && v != opts.Namespace {
			return "", fmt.Errorf("%s: the namespace from the object (%q) does not match --namespace %q; pass --namespace=%s or remove one", name, v, opts.Namespace, v)
		}
		ns = v
	}
	if ns == "" {
		ns = "default"
	}
	return ns, nil
}

// podIn returns the pod an object is or holds: obj itself for a Pod, else
// a Pod built of its template's metadata and spec, and the template. When
// there is none, noPod says why.
func podIn(obj map[string]any, kind string) (pod, tmpl map[string]any, noPod string) {
	if kind == "Pod" {
		return obj, nil, ""
	}
	path, ok := templatePaths[kind]
	if !ok {
		return nil, nil, "a " + kind + " has no pod template"
	}
	tmpl, _ = lookup(obj, path).(map[string]any)
	if tmpl == nil {
		return nil, nil, "no pod template at " + strings.Join(path, ".")
	}
	pod = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": tmpl["metadata"], "spec": tmpl["spec"]}
	if pod["metadata"] == nil {
		pod["metadata"] = map[string]any{}
	}
	return pod, tmpl, ""
}

// mutateDriver runs the webhook's mutation of a driver pod over raw and
// returns its patch, its result and the scheduling it settled on, if any.
func mutateDriver(raw []byte, ns string, template bool, opts Options) (ops []patchops.Operation, res patches.Result, sched string, err error) {
	ops, err = podpatch.Mutate(raw, func(pod *corev1.Pod) error {
		var err error
		res, err = patches.Driver(pod, patches.Input{Namespace: ns, Policy: opts.Policy.For(ns), Version: opts.Version, AppID: opts.AppID, Template: template})
		if s, ok, _ := patches.SchedulingOf(pod); ok && err == nil {
			sched = s.String()
		}
		return err
	})
	return ops, res, sched, err
}

// applyOps applies a patch to raw, as the API server would, and decodes
// the result.
func applyOps(name string, raw []byte, ops []patchops.Operation) (map[string]any, error) {
	patchJSON, err := podpatch.Encode(ops)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	patched, err := p.Apply(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: apply patch: %w", name, err)
	}
	var patchedPod map[string]any
	if err := json.Unmarshal(patched, &patchedPod); err != nil {
		return nil, err
	}
	return patchedPod, nil
}

func (o Options) report(format string, args ...any) {
	if o.Report != nil {
		fmt.Fprintf(o.Report, format+"\n", args...)
	}
}

// describe names an object as kubectl does: kind/name, lower case kind.
func describe(kind string, meta map[string]any) string {
	name, _ := meta["name"].(string)
	if name == "" {
		if g, _ := meta["generateName"].(string); g != "" {
			name = g + "(generated)"
		} else {
			name = "(unnamed)"
		}
	}
	return strings.ToLower(kind) + "/" + name
}

func lookup(obj map[string]any, path []string) any {
	var cur any = obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}
