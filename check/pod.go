package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// Pod reports whether the pod was injected and, if not, why and whether it
// would be if created again now; for an injected driver, the sidecar, the
// executors and the last Events. It returns whether the pod is injected.
func Pod(ctx context.Context, w io.Writer, o Options, ns, name string) (bool, error) {
	pod, err := o.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("read pod %s/%s: %w", ns, name, err)
	}
	subject := "pod/" + name
	r := &report{w: w, indent: "  "}
	if raw, ok := pod.Annotations[vocab.AnnotationStatus]; ok {
		var st patches.Status
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return false, fmt.Errorf("%s: annotation %s: %w", subject, vocab.AnnotationStatus, err)
		}
		fmt.Fprintf(w, "%s: injected by sparklet %s, application %s, Spark container %s\n", subject, st.Version, st.AppID, st.SparkContainer)
		return true, o.driverState(ctx, r, pod, st)
	}
	fmt.Fprintf(w, "%s: not injected\n", subject)
	n, err := o.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("read namespace %s: %w", ns, err)
	}
	hooks, err := o.webhooks(ctx)
	if err != nil {
		return false, err
	}
	if len(hooks) == 0 {
		r.line("no sparklet webhook is registered (no MutatingWebhookConfiguration has a %s webhook): install the chart", WebhookName)
	}
	for _, h := range namespaceMatch(r, hooks, n) {
		problems, err := selectorProblems(h.hook.ObjectSelector, pod.Labels)
		switch {
		case err != nil:
			r.line("%s: invalid objectSelector: %v", h, err)
		case len(problems) > 0:
			r.line("%s: the pod does not match its objectSelector: %s", h, strings.Join(problems, "; "))
		default:
			r.line("%s: the pod matches its objectSelector (%s), so the webhook saw it at creation and let it through", h, describeSelector(h.hook.ObjectSelector))
			if h.hook.FailurePolicy != nil && *h.hook.FailurePolicy == "Ignore" {
				r.line("  failurePolicy is Ignore: if the webhook was down, the pod was admitted unpatched")
			}
		}
	}
	o.policyLines(ctx, r, ns)
	if o.Policy == nil {
		return false, nil
	}
	// What the webhook's code says of this pod now.
	trial := pod.DeepCopy()
	res, err := patches.Driver(trial, patches.Input{Namespace: ns, Policy: o.Policy.For(ns), Version: o.Version, AppID: "spark-check"})
	switch {
	case err != nil:
		r.line("sparklet would refuse it: %v", err)
	case res.Skipped != nil:
		r.line("sparklet skips it: %s", res.Skipped.Message)
	default:
		r.line("sparklet would inject it if it were created again now (pods are injected only at creation)")
	}
	for _, w := range res.Warnings {
		r.line("  warning: %s", w)
	}
	return false, nil
}

// driverState writes the sidecar's and the Spark container's state, the
// executors by phase and the last Events of an injected driver pod.
func (o Options) driverState(ctx context.Context, r *report, pod *corev1.Pod, st patches.Status) error {
	r.line("phase: %s", phaseOf(pod))
	if sched, ok, err := patches.SchedulingOf(pod); err != nil {
		r.line("scheduling: %v", err)
	} else if ok {
		r.line("scheduling: %s", sched)
	}
	for _, g := range pod.Spec.SchedulingGates {
		r.line("waiting for scheduling gate %s to be removed (Kueue removes kueue.x-k8s.io/admission when it admits the pod)", g.Name)
	}
	if cs, ok := findStatus(pod.Status.InitContainerStatuses, patches.SidecarName); ok {
		r.line("sidecar %s: %s", patches.SidecarName, containerState(cs))
	} else {
		r.line("sidecar %s: no status yet (pod not started)", patches.SidecarName)
	}
	if cs, ok := findStatus(pod.Status.ContainerStatuses, st.SparkContainer); ok {
		r.line("spark container %s: %s", st.SparkContainer, containerState(cs))
	}
	if ended, ok := pod.Annotations[vocab.AnnotationEnded]; ok {
		r.line("ended: %s", ended)
	}
	if url, ok := pod.Annotations[vocab.AnnotationUIURL]; ok {
		r.line("spark ui: %s", url)
	}
	if url, ok := pod.Annotations[vocab.AnnotationHistoryURL]; ok {
		r.line("history: %s", url)
	}
	o.connectLines(ctx, r, pod, st)
	key := vocab.LabelAppID
	if st.AppPerJVM { // each JVM's executors carry its own application id
		key = vocab.LabelDriverApp
	}
	sel := labels.SelectorFromSet(labels.Set{key: st.AppID, vocab.LabelRole: "executor"}).String()
	execs, err := o.Client.CoreV1().Pods(pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		r.line("executors: not listed: %v", err)
	} else {
		r.line("executors: %s", executorPhases(execs.Items))
	}
	return o.events(ctx, r, pod)
}

func phaseOf(pod *corev1.Pod) string {
	s := string(pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		s += ", terminating"
	}
	if pod.Status.Reason != "" {
		s += " (" + pod.Status.Reason + ")"
	}
	return s
}

func findStatus(list []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
	for _, cs := range list {
		if cs.Name == name {
			return cs, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// containerState reads like kubectl describe's State line.
func containerState(cs corev1.ContainerStatus) string {
	var s string
	switch st := cs.State; {
	case st.Running != nil:
		s = "running"
		if !st.Running.StartedAt.IsZero() {
			s += " for " + duration.HumanDuration(time.Since(st.Running.StartedAt.Time))
		}
	case st.Waiting != nil:
		s = "waiting: " + st.Waiting.Reason
		if st.Waiting.Message != "" {
			s += ": " + st.Waiting.Message
		}
	case st.Terminated != nil:
		s = fmt.Sprintf("terminated: %s, exit code %d", st.Terminated.Reason, st.Terminated.ExitCode)
		if st.Terminated.Message != "" {
			s += ": " + strings.TrimSpace(st.Terminated.Message)
		}
	default:
		s = "no state yet"
	}
	ready := "not ready"
	if cs.Ready {
		ready = "ready"
	}
	return fmt.Sprintf("%s, %s, %d restarts", s, ready, cs.RestartCount)
}

// executorPhases counts pods by phase in the lifecycle's order.
func executorPhases(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "none"
	}
	counts := map[corev1.PodPhase]int{}
	terminating := 0
	for _, p := range pods {
		counts[p.Status.Phase]++
		if p.DeletionTimestamp != nil {
			terminating++
		}
	}
	var parts []string
	for _, ph := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
		if counts[ph] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[ph], ph))
		}
	}
	if terminating > 0 {
		parts = append(parts, fmt.Sprintf("%d terminating", terminating))
	}
	return fmt.Sprintf("%d (%s)", len(pods), strings.Join(parts, ", "))
}

// events writes the pod's last o.Events Events, oldest first.
func (o Options) events(ctx context.Context, r *report, pod *corev1.Pod) error {
	if o.Events <= 0 {
		return nil
	}
	sel := fields.Set{"involvedObject.name": pod.Name, "involvedObject.namespace": pod.Namespace, "involvedObject.uid": string(pod.UID)}.AsSelector().String()
	list, err := o.Client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		r.line("events: not listed: %v", err)
		return nil
	}
	evs := list.Items
	sort.SliceStable(evs, func(i, j int) bool { return lastSeen(evs[i]).Before(lastSeen(evs[j])) })
	if len(evs) > o.Events {
		evs = evs[len(evs)-o.Events:]
	}
	if len(evs) == 0 {
		r.line("events: none")
		return nil
	}
	r.line("events (last %d):", len(evs))
	for _, e := range slices.Clip(evs) {
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		count := ""
		if e.Count > 1 {
			count = fmt.Sprintf(" (x%d)", e.Count)
		}
		r.line("  %s ago  %s  %s  %s: %s%s", duration.HumanDuration(time.Since(lastSeen(e))), e.Type, e.Reason, from, strings.TrimSpace(e.Message), count)
	}
	return nil
}

func lastSeen(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
