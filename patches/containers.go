package patches

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// Helpers the driver and executor code share: upserts by key, finding the
// Spark container, env lookups and per-container resource caps.

// upsert adds item to list when no element has its key. When one has, it is
// replaced only if replace is set. The position of existing elements is kept.
func upsert[T any](list []T, item T, key func(*T) string, replace bool) []T {
	k := key(&item)
	for i := range list {
		if key(&list[i]) == k {
			if replace {
				list[i] = item
			}
			return list
		}
	}
	return append(list, item)
}

// The keys upsert compares, read through a pointer: a Volume is a few
// hundred bytes to copy.
func envName(e *corev1.EnvVar) string                 { return e.Name }
func volumeName(v *corev1.Volume) string              { return v.Name }
func mountPath(m *corev1.VolumeMount) string          { return m.MountPath }
func secretRef(r *corev1.LocalObjectReference) string { return r.Name }

// upsertAt replaces the container of the same name where it stands, or
// inserts it at index at.
func upsertAt(list []corev1.Container, c corev1.Container, at int) []corev1.Container {
	for i := range list {
		if list[i].Name == c.Name {
			list[i] = c
			return list
		}
	}
	if at > len(list) {
		at = len(list)
	}
	return append(list[:at], append([]corev1.Container{c}, list[at:]...)...)
}

func hasEnv(env []corev1.EnvVar, name string) bool { return envIndex(env, name) >= 0 }

func envIndex(env []corev1.EnvVar, name string) int {
	for i := range env {
		if env[i].Name == name {
			return i
		}
	}
	return -1
}

// findContainer picks the Spark container: the one the annotation names,
// else the first of names present, else the only container that is not a
// mesh's proxy.
func findContainer(pod *corev1.Pod, names []string) (int, error) {
	cs := pod.Spec.Containers
	if want, ok := pod.Annotations[vocab.AnnotationContainer]; ok {
		for i := range cs {
			if cs[i].Name == want {
				return i, nil
			}
		}
		return 0, &Refused{Reason: "no-spark-container", Message: fmt.Sprintf(
			"annotation %s names container %q, but the pod's containers are %s; fix the annotation",
			vocab.AnnotationContainer, want, listNames(cs))}
	}
	for _, n := range names {
		for i := range cs {
			if cs[i].Name == n {
				return i, nil
			}
		}
	}
	if i, ok := onlyAppContainer(cs); ok {
		return i, nil
	}
	return 0, &Refused{Reason: "no-spark-container", Message: fmt.Sprintf(
		"cannot tell which container runs Spark among %s: name it %s, or annotate the pod with %s: <name>",
		listNames(cs), strings.Join(quoteAll(names), ", "), vocab.AnnotationContainer)}
}

func listNames(cs []corev1.Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = strconv.Quote(c.Name)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}

// checkContainerLimits refuses a container whose requests or limits exceed
// the policy's per-pod caps.
func checkContainerLimits(c *corev1.Container, lim policy.ResourceLimit, role string) error {
	for _, r := range []struct {
		name corev1.ResourceName
		max  *resource.Quantity
		key  string
	}{{corev1.ResourceCPU, lim.MaxCores, "maxCores"}, {corev1.ResourceMemory, lim.MaxMemory, "maxMemory"}} {
		if r.max == nil {
			continue
		}
		for _, list := range []struct {
			name string
			rl   corev1.ResourceList
		}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
			if q, ok := list.rl[r.name]; ok && q.Cmp(*r.max) > 0 {
				return &Refused{Reason: "over-limit", Field: "resources." + list.name + "." + string(r.name), Message: fmt.Sprintf(
					"container %q resources.%s.%s=%s exceeds the policy limit limits.%s.%s=%s; lower it",
					c.Name, list.name, r.name, q.String(), role, r.key, r.max)}
			}
		}
	}
	return nil
}
