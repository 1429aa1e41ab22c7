package podrunner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// objects reads the ConfigMaps and Secrets a pod refers to.
type objects interface {
	configMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// envInput is what the kubelet knows when it builds a container's env.
type envInput struct {
	pod         *corev1.Pod
	podIPs      []string
	hostIP      string
	allocatable corev1.ResourceList
	// service holds the KUBERNETES_SERVICE_* variables; they may be used in
	// $(VAR) references and are added last unless the container sets them.
	service map[string]string
	objects objects
}

// containerEnv resolves a container's env as the kubelet does (kubernetes
// pkg/kubelet/kubelet_pods.go makeEnvironmentVariables, v1.37.2): envFrom
// first (with its prefix; optional sources may be missing), then env in
// order, where a value expands $(VAR) against the variables defined so far
// and the service variables, and a valueFrom is resolved from its source
// (an optional missing ConfigMap, Secret or key leaves the variable unset).
// The service variables the container does not set come last.
//
// The kubelet returns the variables in map order; here envFrom variables
// come sorted by name, then env in declaration order, a redefined name
// keeping its first position.
func containerEnv(ctx context.Context, in envInput, c *corev1.Container) ([]corev1.EnvVar, error) {
	var out []corev1.EnvVar
	values := map[string]string{}
	set := func(name, value string) {
		if _, seen := values[name]; !seen {
			out = append(out, corev1.EnvVar{Name: name})
		}
		values[name] = value
	}
	ns := in.pod.Namespace
	for _, from := range c.EnvFrom {
		data := map[string]string{}
		switch {
		case from.ConfigMapRef != nil:
			cm, err := in.objects.configMap(ctx, ns, from.ConfigMapRef.Name)
			if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("configMap %s/%s: %w", ns, from.ConfigMapRef.Name, err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := in.objects.secret(ctx, ns, from.SecretRef.Name)
			if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("secret %s/%s: %w", ns, from.SecretRef.Name, err)
			}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(from.Prefix+k, data[k])
		}
	}
	lookup := func(name string) (string, bool) {
		if v, ok := values[name]; ok {
			return v, true
		}
		v, ok := in.service[name]
		return v, ok
	}
	for _, e := range c.Env {
		value, ok, err := in.envValue(ctx, c, e, lookup)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, value)
		}
	}
	for i := range out {
		out[i].Value = values[out[i].Name]
	}
	for _, k := range slices.Sorted(maps.Keys(in.service)) {
		if _, ok := values[k]; !ok {
			out = append(out, corev1.EnvVar{Name: k, Value: in.service[k]})
		}
	}
	return out, nil
}

// envValue resolves one env entry; ok is false when an optional source is
// missing and the variable is left unset.
func (in envInput) envValue(ctx context.Context, c *corev1.Container, e corev1.EnvVar, lookup func(string) (string, bool)) (value string, ok bool, err error) {
	if e.Value != "" || e.ValueFrom == nil {
		return expand(e.Value, lookup), true, nil
	}
	src := e.ValueFrom
	ns := in.pod.Namespace
	switch {
	case src.FieldRef != nil:
		v, err := in.podField(src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		target := c
		if name := src.ResourceFieldRef.ContainerName; name != "" {
			if target, err = findContainer(in.pod, name); err != nil {
				return "", false, err
			}
		}
		v, err := resourceValue(src.ResourceFieldRef, target, in.allocatable)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := in.objects.configMap(ctx, ns, ref.Name)
		if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("configMap %s/%s: %w", ns, ref.Name, err)
		}
		v, found := cm.Data[ref.Key]
		if !found && !isTrue(ref.Optional) {
			return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, ns, ref.Name)
		}
		return v, found, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := in.objects.secret(ctx, ns, ref.Name)
		if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("secret %s/%s: %w", ns, ref.Name, err)
		}
		v, found := s.Data[ref.Key]
		if !found && !isTrue(ref.Optional) {
			return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, ns, ref.Name)
		}
		return string(v), found, nil
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

// podField resolves an env fieldRef: the status and spec fields the
// kubelet knows, then metadata.
func (in envInput) podField(path string) (string, error) {
	switch path {
	case "spec.nodeName":
		return in.pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return in.pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return in.hostIP, nil
	case "status.podIP":
		if len(in.podIPs) == 0 {
			return "", nil
		}
		return in.podIPs[0], nil
	case "status.podIPs":
		return strings.Join(in.podIPs, ","), nil
	}
	return metadataField(in.pod, path)
}

// expandCommand expands $(VAR) in a container's command and args against
// its resolved env, as the kubelet does before it starts the container.
func expandCommand(list []string, env []corev1.EnvVar) []string {
	values := map[string]string{}
	for _, e := range env {
		values[e.Name] = e.Value
	}
	lookup := func(name string) (string, bool) { v, ok := values[name]; return v, ok }
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = expand(s, lookup)
	}
	return out
}

// mergeEnv lays the container's variables over the image's, as a container
// runtime does: a variable the image sets keeps its place and takes the
// container's value; new ones are appended.
func mergeEnv(image []string, container []corev1.EnvVar) []string {
	out := append([]string(nil), image...)
	index := map[string]int{}
	for i, kv := range out {
		name, _, _ := strings.Cut(kv, "=")
		index[name] = i
	}
	for _, e := range container {
		kv := e.Name + "=" + e.Value
		if i, ok := index[e.Name]; ok {
			out[i] = kv
			continue
		}
		index[e.Name] = len(out)
		out = append(out, kv)
	}
	return out
}

// serviceEnv is the kubernetes Service's env as the kubelet adds it to
// every pod, pointing at the runner's API proxy.
func serviceEnv(host string, port int) map[string]string {
	p := fmt.Sprint(port)
	addr := fmt.Sprintf("tcp://%s:%s", host, p)
	prefix := "KUBERNETES_PORT_" + p + "_TCP"
	return map[string]string{
		"KUBERNETES_SERVICE_HOST":       host,
		"KUBERNETES_SERVICE_PORT":       p,
		"KUBERNETES_SERVICE_PORT_HTTPS": p,
		"KUBERNETES_PORT":               addr,
		prefix:                          addr,
		prefix + "_PROTO":               "tcp",
		prefix + "_PORT":                p,
		prefix + "_ADDR":                host,
	}
}

func isTrue(b *bool) bool { return b != nil && *b }
