package check

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// missingUnderLimitRanges says what the LimitRanges require of a container
// that r leaves out. The API server applies a LimitRange's defaults to a
// pod before the admission webhooks run, so the containers sparklet's
// webhook adds never get them, and LimitRanger's validation, which runs
// after, refuses a missing limit under a max or a maxLimitRequestRatio and
// a missing request under a min or a maxLimitRequestRatio
// (plugin/pkg/admission/limitranger/admission.go, Kubernetes 1.36). A
// request left out of r is its limit when r has one (the API server's
// defaulting of a container's resources).
func missingUnderLimitRanges(ranges []corev1.LimitRange, r corev1.ResourceRequirements) []string {
	var out []string
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, name := range sortedUnion(item.Max, item.MaxLimitRequestRatio) {
				if _, ok := r.Limits[name]; !ok {
					out = append(out, fmt.Sprintf("LimitRange %s requires a %s limit (its max or maxLimitRequestRatio), and its default limit never reaches a container that sparklet adds: set limits.%s", lr.Name, name, name))
				}
			}
			for _, name := range sortedUnion(item.Min, item.MaxLimitRequestRatio) {
				_, req := r.Requests[name]
				_, lim := r.Limits[name]
				if !req && !lim {
					out = append(out, fmt.Sprintf("LimitRange %s requires a %s request (its min or maxLimitRequestRatio), and its default request never reaches a container that sparklet adds: set requests.%s", lr.Name, name, name))
				}
			}
		}
	}
	return out
}

func sortedUnion(a, b corev1.ResourceList) []corev1.ResourceName {
	set := maps.Clone(a)
	if set == nil {
		set = corev1.ResourceList{}
	}
	maps.Copy(set, b)
	return slices.Sorted(maps.Keys(set))
}
