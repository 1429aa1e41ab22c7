// Package inject is the offline injector behind `sparklet inject`.
// It runs the webhook's mutation over YAML documents, so a platform team
// can test a policy and a GitOps user can pre-render driver pods.
package inject

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
	Namespace string
	Version   string
	// AppID, when set, replaces the generated application id.
	AppID string
	// Warnings, when set, receives the injection's warnings for the user,
	// one line each, prefixed with the object's name.
	Warnings io.Writer
}

// templatePaths is where each workload kind keeps its pod template.
var templatePaths = map[string][]string{
	"Job":         {"spec", "template"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template"},
	"Deployment":  {"spec", "template"},
	"StatefulSet": {"spec", "template"},
	"ReplicaSet":  {"spec", "template"},
}

// Run reads YAML documents from r and writes them to w, with driver pods and
// driver pod templates injected. Other documents pass through unchanged.
// A refusal stops the run with the webhook's message.
func Run(r io.Reader, w io.Writer, opts Options) error {
	docs, err := splitDocuments(r)
	if err != nil {
		return err
	}
	for i, doc := range docs {
		out, err := injectDocument(doc, opts)
		if err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

func injectDocument(doc []byte, opts Options) ([]byte, error) {
	jsonDoc, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(jsonDoc, &obj); err != nil || obj == nil {
		return doc, nil // a list, a scalar or an empty document: not ours
	}
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name := describe(kind, meta)
	ns := opts.Namespace
	if v, _ := meta["namespace"].(string); v != "" && ns == "" {
		ns = v
	}
	if ns == "" {
		ns = "default"
	}

	var podObj map[string]any
	if kind == "Pod" {
		podObj = obj
	} else if path, ok := templatePaths[kind]; ok {
		tmpl, _ := lookup(obj, path).(map[string]any)
		if tmpl == nil {
			return doc, nil
		}
		podObj = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": tmpl["metadata"], "spec": tmpl["spec"]}
		if podObj["metadata"] == nil {
			podObj["metadata"] = map[string]any{}
		}
	} else {
		return doc, nil
	}

	raw, err := json.Marshal(podObj)
	if err != nil {
		return nil, err
	}
	skipped := ""
	ops, err := podpatch.Mutate(raw, func(pod *corev1.Pod) error {
		var err error
		var warnings []string
		skipped, warnings, err = patches.Driver(pod, patches.Input{Namespace: ns, Policy: opts.Policy.For(ns), Version: opts.Version, AppID: opts.AppID})
		if opts.Warnings != nil {
			for _, w := range warnings {
				fmt.Fprintf(opts.Warnings, "%s: warning: %s\n", name, w)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if skipped != "" || len(ops) == 0 {
		return doc, nil
	}
	patchJSON, err := json.Marshal(ops)
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
	if kind == "Pod" {
		obj = patchedPod
	} else {
		tmpl := lookup(obj, templatePaths[kind]).(map[string]any)
		tmpl["metadata"] = patchedPod["metadata"]
		tmpl["spec"] = patchedPod["spec"]
	}
	return yaml.Marshal(obj)
}

func describe(kind string, meta map[string]any) string {
	name, _ := meta["name"].(string)
	if name == "" {
		name, _ = meta["generateName"].(string)
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

// splitDocuments splits a YAML stream on "---" separator lines.
func splitDocuments(r io.Reader) ([][]byte, error) {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	flush := func() {
		if strings.TrimSpace(cur.String()) != "" {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
		}
		cur.Reset()
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "---") && strings.TrimSpace(strings.TrimPrefix(line, "---")) == "" {
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	flush()
	return docs, nil
}
