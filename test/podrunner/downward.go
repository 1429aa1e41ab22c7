package podrunner

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// metadataField returns the value of a metadata field path, as the kubelet
// formats it for env and downward API files (kubernetes pkg/fieldpath
// ExtractFieldPathAsString, v1.37.2): a subscripted annotation or label is
// its raw value, a whole map is formatted by formatMap.
func metadataField(pod *corev1.Pod, path string) (string, error) {
	if base, key, ok := splitSubscript(path); ok {
		switch base {
		case "metadata.annotations":
			return pod.Annotations[key], nil
		case "metadata.labels":
			return pod.Labels[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support a subscript", path)
	}
	switch path {
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// splitSubscript splits "metadata.annotations['k']" into its path and key.
func splitSubscript(path string) (base, key string, ok bool) {
	if !strings.HasSuffix(path, "']") {
		return path, "", false
	}
	base, key, ok = strings.Cut(strings.TrimSuffix(path, "']"), "['")
	if !ok || base == "" {
		return path, "", false
	}
	return base, key, true
}

// formatMap renders a map as the downward API does: one key="value" line
// per key, sorted, the value Go-quoted, no newline after the last.
func formatMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

// resourceValue resolves a resourceFieldRef against a container whose
// limits default to the node's allocatable, as the kubelet defaults them
// (kubernetes pkg/api/v1/resource/helpers.go ExtractContainerResourceValue,
// v1.37.2): the value divided by the divisor (default 1), rounded up; cpu
// is divided in millicores.
func resourceValue(sel *corev1.ResourceFieldSelector, c *corev1.Container, allocatable corev1.ResourceList) (string, error) {
	divisor := resource.MustParse("1")
	if !sel.Divisor.IsZero() {
		divisor = sel.Divisor
	}
	kind, name, ok := strings.Cut(sel.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", sel.Resource)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q, set := list[corev1.ResourceName(name)]
	if !set && kind == "limits" {
		q = allocatable[corev1.ResourceName(name)]
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// findContainer returns the named container of a pod, init or main.
func findContainer(pod *corev1.Pod, name string) (*corev1.Container, error) {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], nil
			}
		}
	}
	return nil, fmt.Errorf("container %q not found", name)
}
