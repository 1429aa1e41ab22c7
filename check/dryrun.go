package check

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

// DryRunPolicy sends a pod made of each pod-settings section of the policy
// to the API server as a server-side dry run (nothing is stored), so that
// the API server's own validation and admission (priority classes, service
// accounts, Pod Security) judge the fields the policy holds; and a pod with
// the resources of each container sparklet injects in every driver, so that
// a LimitRange (a per-container maximum, minimum or maxLimitRequestRatio)
// judges them, whose message does not name the container. Cluster
// sections are tried in namespace ns, a namespace's sections in that
// namespace. It returns one problem per refused section, prefixed with the
// section's path, and a note per namespace section not tried because its
// namespace does not exist (yet).
func DryRunPolicy(ctx context.Context, client kubernetes.Interface, p *policy.Policy, ns string) (problems, notes []string, err error) {
	type section struct {
		path, ns string
		pod      *corev1.Pod
	}
	var sections []section
	settings := func(path, ns string, s policy.PodSettings) {
		if !isEmpty(s) {
			sections = append(sections, section{path, ns, podOf(s)})
		}
	}
	settings("driver.defaults", ns, p.Driver.Defaults)
	settings("driver.enforced", ns, p.Driver.Enforced)
	settings("executor.defaults", ns, p.Executor.Defaults)
	settings("executor.enforced", ns, p.Executor.Enforced)
	ranges, err := client.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		notes = append(notes, fmt.Sprintf("sidecar: could not list the LimitRanges of namespace %s (%s); the dry run judges sparklet's containers with their defaults, which injected containers do not get", ns, apiMessage(err)))
		ranges = &corev1.LimitRangeList{}
	case err != nil:
		return nil, nil, fmt.Errorf("list the LimitRanges of namespace %s: %w", ns, err)
	}
	judged := map[string]bool{}
	for _, c := range addedContainers(p.Sidecar) {
		if judged[c.field] {
			continue // the same field's resources, judged once
		}
		judged[c.field] = true
		// A container the dry run's LimitRange defaults would complete is
		// judged here instead: the injected one does not get them.
		if missing := limitRangeProblems(ranges.Items, c.r, false); len(missing) > 0 {
			for _, m := range missing {
				problems = append(problems, fmt.Sprintf("%s: in namespace %s, %s", c.field, ns, m))
			}
			continue
		}
		sections = append(sections, section{c.field, ns, injectedOf(c.name, c.r)})
	}
	for _, name := range slices.Sorted(maps.Keys(p.Namespaces)) {
		n := p.Namespaces[name]
		at := "namespaces." + name
		if _, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			notes = append(notes, fmt.Sprintf("%s: namespace %s does not exist; its sections were not tried", at, name))
			continue
		} else if err != nil {
			return nil, nil, fmt.Errorf("read namespace %s: %w", name, err)
		}
		settings(at+".driver.defaults", name, n.Driver.Defaults)
		settings(at+".driver.enforced", name, n.Driver.Enforced)
		settings(at+".executor.defaults", name, n.Executor.Defaults)
		settings(at+".executor.enforced", name, n.Executor.Enforced)
	}
	for _, sec := range sections {
		_, err := client.CoreV1().Pods(sec.ns).Create(ctx, sec.pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "sparklet-policy-validate"})
		if err == nil {
			continue
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) && !apierrors.IsBadRequest(err) {
			return nil, nil, fmt.Errorf("%s: dry run in namespace %s: %w", sec.path, sec.ns, err)
		}
		problems = append(problems, fmt.Sprintf("%s: the API server refuses it (dry run in namespace %s): %s", sec.path, sec.ns, apiMessage(err)))
	}
	return problems, notes, nil
}

// injectedOf is a pod of one container with the name, the security
// context and the resources that sparklet gives an injected container, so
// that Pod Security judges it as it judges sparklet's.
func injectedOf(name string, r corev1.ResourceRequirements) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "sparklet-policy-dry-run-"},
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{{Name: name, Image: "sparklet.invalid/policy-dry-run", Resources: r, SecurityContext: patches.RestrictedContext()}},
			RestartPolicy: corev1.RestartPolicyNever,
		},
	}
}

func isEmpty(s policy.PodSettings) bool {
	s.AllowHostPath = nil
	return s.Labels == nil && s.Annotations == nil && len(s.Env) == 0 && len(s.Volumes) == 0 && len(s.VolumeMounts) == 0 &&
		len(s.Tolerations) == 0 && len(s.NodeSelector) == 0 && s.PriorityClassName == "" && s.SchedulerName == "" &&
		s.ServiceAccountName == "" && s.SecurityContext == nil && s.ContainerSecurityContext == nil &&
		len(s.ImagePullSecrets) == 0 && s.Resources == nil
}

// podOf is the smallest pod that carries the settings: one container,
// named as the policy's env, mounts and resources apply to it.
func podOf(s policy.PodSettings) *corev1.Pod {
	c := corev1.Container{Name: "spark", Image: "sparklet.invalid/policy-dry-run", Env: s.Env, VolumeMounts: s.VolumeMounts, SecurityContext: s.ContainerSecurityContext}
	if s.Resources != nil {
		c.Resources = *s.Resources
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "sparklet-policy-dry-run-", Labels: s.Labels, Annotations: s.Annotations},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{c}, Volumes: s.Volumes, Tolerations: s.Tolerations, NodeSelector: s.NodeSelector,
			PriorityClassName: s.PriorityClassName, SchedulerName: s.SchedulerName, ServiceAccountName: s.ServiceAccountName,
			SecurityContext: s.SecurityContext, ImagePullSecrets: s.ImagePullSecrets, RestartPolicy: corev1.RestartPolicyNever,
		},
	}
}

// apiMessage is the API server's message with the pod's own paths
// (spec.containers[0]...) left as they are: they name the field.
func apiMessage(err error) string {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return err.Error()
	}
	st := se.Status()
	if st.Details != nil && len(st.Details.Causes) > 0 {
		var parts []string
		for _, c := range st.Details.Causes {
			parts = append(parts, strings.TrimSpace(c.Field+": "+c.Message))
		}
		return strings.Join(parts, "; ")
	}
	return st.Message
}
