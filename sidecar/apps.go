package sidecar

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/vocab"
)

// apps is the application the sidecar serves: the one whose executors the
// JVM sees and may create, and whose ConfigMaps and PVCs it may touch.
//
// A driver whose JVM runs once has one application, the pod's
// spark-app-selector, which the webhook set as spark.app.id. A driver whose
// container restarts in place (Config.AppPerJVM, docs/connect.md) runs a
// new application in every JVM, with the id Spark picked for it
// (KubernetesClusterSchedulerBackend.applicationId). The sidecar learns
// that id from the JVM's first request that names one (a label selector or
// the labels of an object it creates) and adopts it once it has checked
// that no other application has it; it then deletes what the JVMs before
// left. Everything of the pod's applications carries vocab.LabelDriverApp
// with the pod's id, so that is what the executor informer watches and
// what cleanup deletes.
type apps struct {
	perJVM    bool
	pod       string // the driver pod's spark-app-selector
	namespace string
	client    kubecore.Interface
	log       *logrus.Entry
	events    *recorder
	timeout   time.Duration // bounds each cleanup

	// mu serialises adoptions and cleanups; current is also read without
	// it, for every pod served.
	mu        sync.Mutex
	current   atomic.Value // string; "" until the first JVM names its application
	adoptedAt time.Time    // when current was adopted
	ended     time.Time    // the last Spark container termination handled
	onEnded   func()       // called when a JVM ended, such as to forget its Connect sessions
	onStarted func(string) // called with the application a JVM named, once adopted
}

// whenJVMEnds makes f run each time a JVM of the pod ends.
func (a *apps) whenJVMEnds(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onEnded = f
}

// whenAppStarts makes f run, in a goroutine of its own, each time a JVM
// of an app-per-JVM driver names its application.
func (a *apps) whenAppStarts(f func(id string)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onStarted = f
}

// id is the application the JVM runs now ("" before an app-per-JVM
// driver's JVM named it).
func (a *apps) id() string {
	if !a.perJVM {
		return a.pod
	}
	id, _ := a.current.Load().(string)
	return id
}

// use returns the application a request works on. named is the
// application the request names, or "" when it names none. An
// app-per-JVM driver's JVM naming a new application starts it: use checks
// it and deletes what the applications before it left.
func (a *apps) use(ctx context.Context, named string) (string, error) {
	if !a.perJVM {
		return a.pod, nil
	}
	if cur := a.id(); named == "" || named == cur {
		return cur, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.id()
	if named == old { // adopted meanwhile
		return old, nil
	}
	if err := a.checkFree(ctx, named); err != nil {
		return "", err
	}
	a.current.Store(named)
	a.adoptedAt = time.Now()
	a.log.WithFields(logrus.Fields{"app": named, "previous": old}).Info("the JVM runs a new application")
	a.events.normal("ApplicationStarted", fmt.Sprintf("the Spark JVM started application %s", named))
	a.cleanupLocked(ctx, "a new JVM started application "+named)
	if a.onStarted != nil {
		go a.onStarted(named)
	}
	return named, nil
}

// checkFree refuses an application id that is not a label value or that
// pods other than this driver's executors carry: another driver, or
// another driver's executors.
func (a *apps) checkFree(ctx context.Context, id string) error {
	if msgs := validation.IsValidLabelValue(id); len(msgs) > 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("application id %q is not a label value: %v", id, msgs))
	}
	pods, err := a.client.Pods(a.namespace).List(ctx, metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + id, Limit: 100})
	if err != nil {
		return fmt.Errorf("check application id %s: %w", id, err)
	}
	for _, p := range pods.Items {
		if p.Labels[vocab.LabelDriverApp] != a.pod || p.Labels[vocab.LabelRole] != "executor" {
			return apierrors.NewForbidden(podsGR, p.Name, fmt.Errorf(
				"application id %s belongs to pod %s, which is not an executor of this driver; a JVM may only start an application of its own", id, p.Name))
		}
	}
	return nil
}

// jvmEnded deletes what the JVM that ended at finished left, unless a
// newer JVM already named its application after that: then only the
// older applications' go. Container timestamps have whole seconds, so an
// application adopted within the second its JVM ended waits for the next
// adoption.
func (a *apps) jvmEnded(finished time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !finished.After(a.ended) {
		return
	}
	a.ended = finished
	if a.id() != "" && a.adoptedAt.Before(finished) {
		a.current.Store("")
	}
	if a.onEnded != nil {
		a.onEnded()
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	a.cleanupLocked(ctx, "the Spark container ended")
}

// cleanupLocked deletes the executors, ConfigMaps and PVCs of this pod's
// applications other than the current one, and reports it.
func (a *apps) cleanupLocked(ctx context.Context, why string) {
	start := time.Now()
	sel := a.others()
	if err := cleanup(ctx, a.client, a.namespace, sel); err != nil {
		a.events.warning("CleanupFailed", err.Error())
		a.log.WithError(err).Error("cleanup failed")
		return
	}
	msg := fmt.Sprintf("%s: deleted the executors, executor ConfigMaps and PVCs of the JVMs before in %s", why, time.Since(start).Round(time.Millisecond))
	a.events.normal("CleanedUp", msg)
	a.log.Info(msg)
}

// others selects what the pod's applications other than the current one
// left.
func (a *apps) others() labels.Selector {
	sel := a.all()
	if cur := a.id(); cur != "" {
		req, _ := labels.NewRequirement(vocab.LabelAppID, selection.NotEquals, []string{cur})
		sel = sel.Add(*req)
	}
	return sel
}

// all selects everything of this pod's applications.
func (a *apps) all() labels.Selector {
	key, value := vocab.LabelAppID, a.pod
	if a.perJVM {
		key = vocab.LabelDriverApp
	}
	req, _ := labels.NewRequirement(key, selection.Equals, []string{value})
	return labels.NewSelector().Add(*req)
}

// scope narrows a label selector to application id of this pod.
func (a *apps) scope(sel labels.Selector, id string) labels.Selector {
	if named, _ := sel.RequiresExactMatch(vocab.LabelAppID); named != id {
		req, _ := labels.NewRequirement(vocab.LabelAppID, selection.Equals, []string{id})
		sel = sel.Add(*req)
	}
	if a.perJVM {
		req, _ := labels.NewRequirement(vocab.LabelDriverApp, selection.Equals, []string{a.pod})
		sel = sel.Add(*req)
	}
	return sel
}

// owns tells whether an object with these labels belongs to the current
// application.
func (a *apps) owns(l map[string]string) bool {
	if a.perJVM && l[vocab.LabelDriverApp] != a.pod {
		return false
	}
	id := a.id()
	return id != "" && l[vocab.LabelAppID] == id
}

// stamp labels an object the current application creates with the pod's
// id, for an app-per-JVM driver.
func (a *apps) stamp(meta *metav1.ObjectMeta) {
	if !a.perJVM {
		return
	}
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[vocab.LabelDriverApp] = a.pod
}

// lastTermination is when the Spark container last ended, from its state
// or, once restarted, its last state; zero if it never did.
func lastTermination(pod *corev1.Pod, container string) time.Time {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name != container {
			continue
		}
		if t := s.State.Terminated; t != nil {
			return t.FinishedAt.Time
		}
		if t := s.LastTerminationState.Terminated; t != nil {
			return t.FinishedAt.Time
		}
	}
	return time.Time{}
}
