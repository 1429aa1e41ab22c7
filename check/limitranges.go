package check

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

// limitRangeProblems says what the LimitRanges' per-container rules refuse
// in a container with resources r that sparklet adds; with values false,
// only what r leaves out. The API server applies a LimitRange's defaults
// to a pod before the admission webhooks run, so the containers sparklet's
// webhook adds never get them, and LimitRanger's validation, which runs
// after, refuses a missing limit under a max or a maxLimitRequestRatio and
// a missing request under a min or a maxLimitRequestRatio
// (plugin/pkg/admission/limitranger/admission.go, Kubernetes 1.36). A
// request left out of r is its limit when r has one (the API server's
// defaulting of a container's resources).
func limitRangeProblems(ranges []corev1.LimitRange, r corev1.ResourceRequirements, values bool) []string {
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
				if _, ok := request(r, name); !ok {
					out = append(out, fmt.Sprintf("LimitRange %s requires a %s request (its min or maxLimitRequestRatio), and its default request never reaches a container that sparklet adds: set requests.%s", lr.Name, name, name))
				}
			}
			if values {
				out = append(out, limitRangeValues(lr.Name, item, r)...)
			}
		}
	}
	return out
}

// limitRangeValues says which of r's values one per-container rule of
// LimitRange name refuses.
func limitRangeValues(name string, item corev1.LimitRangeItem, r corev1.ResourceRequirements) []string {
	var out []string
	for _, res := range slices.Sorted(maps.Keys(item.Max)) {
		hi := item.Max[res]
		if lim, ok := r.Limits[res]; ok && lim.Cmp(hi) > 0 {
			out = append(out, fmt.Sprintf("%s limit %s is above LimitRange %s's max %s", res, lim.String(), name, hi.String()))
		}
	}
	for _, res := range slices.Sorted(maps.Keys(item.Min)) {
		lo := item.Min[res]
		if req, ok := request(r, res); ok && req.Cmp(lo) < 0 {
			out = append(out, fmt.Sprintf("%s request %s is below LimitRange %s's min %s", res, req.String(), name, lo.String()))
		}
	}
	for _, res := range slices.Sorted(maps.Keys(item.MaxLimitRequestRatio)) {
		ratio := item.MaxLimitRequestRatio[res]
		req, reqOK := request(r, res)
		lim, limOK := r.Limits[res]
		if !reqOK || !limOK || req.IsZero() {
			continue
		}
		if observed := float64(lim.MilliValue()) / float64(req.MilliValue()); observed > float64(ratio.MilliValue())/1000 {
			out = append(out, fmt.Sprintf("%s limit %s is %.4g times its request %s, above LimitRange %s's maxLimitRequestRatio %s", res, lim.String(), observed, req.String(), name, ratio.String()))
		}
	}
	return out
}

// quotaProblems says which requests and limits that the ResourceQuotas
// count r leaves out: the API server asks every container of a pod, init
// containers too, for each one a quota counts (the pod evaluator's
// Constraints, pkg/quota/v1/evaluator/core/pods.go, Kubernetes 1.36).
func quotaProblems(quotas []corev1.ResourceQuota, r corev1.ResourceRequirements) []string {
	var out []string
	for _, q := range quotas {
		for _, name := range slices.Sorted(maps.Keys(q.Spec.Hard)) {
			var field string
			var ok bool
			switch name {
			case corev1.ResourceCPU, corev1.ResourceMemory:
				field = "requests." + string(name)
				_, ok = request(r, name)
			case corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory:
				field = string(name)
				_, ok = request(r, corev1.ResourceName(strings.TrimPrefix(field, "requests.")))
			case corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory:
				field = string(name)
				_, ok = r.Limits[corev1.ResourceName(strings.TrimPrefix(field, "limits."))]
			default:
				continue
			}
			if !ok {
				out = append(out, fmt.Sprintf("ResourceQuota %s counts %s, which every container then needs: set %s", q.Name, name, field))
			}
		}
	}
	return out
}

// request is r's request for name, or its limit, which the API server
// makes the request when the request is left out.
func request(r corev1.ResourceRequirements, name corev1.ResourceName) (resource.Quantity, bool) {
	if q, ok := r.Requests[name]; ok {
		return q, true
	}
	q, ok := r.Limits[name]
	return q, ok
}

func sortedUnion(a, b corev1.ResourceList) []corev1.ResourceName {
	set := maps.Clone(a)
	if set == nil {
		set = corev1.ResourceList{}
	}
	maps.Copy(set, b)
	return slices.Sorted(maps.Keys(set))
}

// addedContainer is a container sparklet adds to drivers, when it does
// (a note, or empty for every driver), the policy field that gives its
// resources, and those resources.
type addedContainer struct {
	name, when, field string
	r                 corev1.ResourceRequirements
}

// addedContainers are the containers sparklet adds to drivers, with the
// resources s gives them (patches: addSidecar, addConfInit,
// addInitContainer).
func addedContainers(s policy.Sidecar) []addedContainer {
	of := func(r *corev1.ResourceRequirements) corev1.ResourceRequirements {
		if r == nil {
			return corev1.ResourceRequirements{}
		}
		return *r
	}
	return []addedContainer{
		{patches.SidecarName, "", "sidecar.resources", of(s.Resources)},
		{patches.ConfInitName, "", "sidecar.confResources", of(s.ConfResources)},
		{patches.InitName, "with sparklet.io/fetch", "sidecar.resources", of(s.Resources)},
	}
}

// injectedResources writes, for `sparklet check namespace`, what the
// namespace's LimitRanges and ResourceQuotas say of the containers that
// sparklet adds to its drivers, with the resources the policy gives them.
func (o Options) injectedResources(ctx context.Context, r *report, ns string, s policy.Sidecar) {
	ranges, err := o.Client.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		r.line("LimitRanges: not read: %v", apiMessage(err))
		return
	}
	quotas, err := o.Client.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		r.line("ResourceQuotas: not read: %v", apiMessage(err))
		return
	}
	if len(ranges.Items) == 0 && len(quotas.Items) == 0 {
		return
	}
	fits := true
	for _, c := range addedContainers(s) {
		name := c.name
		if c.when != "" {
			name += ", " + c.when
		}
		for _, p := range append(limitRangeProblems(ranges.Items, c.r, true), quotaProblems(quotas.Items, c.r)...) {
			r.line("%s (the policy's %s): %s; the API server refuses every such driver", name, c.field, p)
			fits = false
		}
	}
	if fits {
		r.line("LimitRanges and ResourceQuotas: sparklet's containers meet them")
	}
}
