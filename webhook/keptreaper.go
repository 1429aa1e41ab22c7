package webhook

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/sparklet/sparklet/vocab"
)

// keptSelector selects the failed executors a driver's sidecar keeps for
// their logs (policy logs.keepFailedExecutorsSeconds).
var keptSelector = vocab.LabelRole + "=executor," + vocab.LabelKeptUntil

// keptReaper deletes the executor pods labelled vocab.LabelKeptUntil once
// the time the label holds has passed. The sidecar that labelled one
// deletes it then too, but only while it runs: when the driver ends
// first, only the reaper removes the kept pods before their owner, the
// driver pod, is deleted (which for a bare pod may be never).
//
// Every webhook replica runs one, with no leader election: a delete names
// the pod's UID, so a second replica's delete of the same pod, or the
// sidecar's, finds it gone (404) or replaced (409) and counts it as gone.
type keptReaper struct {
	client    kubernetes.Interface
	log       *logrus.Entry
	metrics   *reaperMetrics
	now       func() time.Time
	queue     workqueue.TypedRateLimitingInterface[cache.ObjectName]
	listers   map[string]corelisters.PodLister // by namespace; "" for all
	factories []informers.SharedInformerFactory

	mu        sync.Mutex
	malformed map[types.UID]string // labels already logged as malformed
}

// newKeptReaper watches the labelled executors of namespaces (all when
// empty) through client.
func newKeptReaper(client kubernetes.Interface, namespaces []string, m *reaperMetrics, log *logrus.Entry) *keptReaper {
	r := &keptReaper{client: client, log: log, metrics: m, now: time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "kept-executors"}),
		listers: map[string]corelisters.PodLister{}, malformed: map[types.UID]string{}}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = keptSelector }))
		pods := f.Core().V1().Pods()
		_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    r.schedule,
			UpdateFunc: func(_, obj any) { r.schedule(obj) },
			DeleteFunc: r.forget,
		})
		r.listers[ns] = pods.Lister()
		r.factories = append(r.factories, f)
	}
	return r
}

// Run deletes kept executors as their windows end, until ctx ends.
func (r *keptReaper) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	for _, f := range r.factories {
		f.Start(ctx.Done())
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				r.log.WithField("type", typ.String()).Warn("the kept executors' informer never synced")
				return
			}
		}
	}
	r.log.WithField("selector", keptSelector).Info("removing failed executors kept for their logs when their window ends")
	for r.next(ctx) {
	}
}

// keptUntil reads a kept executor's label; ok is false for a pod that is
// not one, err non-nil for a label that holds no Unix time.
func keptUntil(pod *corev1.Pod) (until time.Time, ok bool, err error) {
	v, has := pod.Labels[vocab.LabelKeptUntil]
	if !has || pod.Labels[vocab.LabelRole] != "executor" {
		return time.Time{}, false, nil
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err == nil && secs <= 0 {
		err = strconv.ErrRange
	}
	return time.Unix(secs, 0), err == nil, err
}

// schedule queues a kept executor for the end of its window.
func (r *keptReaper) schedule(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.DeletionTimestamp != nil {
		return
	}
	until, ok, err := keptUntil(pod)
	if err != nil {
		r.reportMalformed(pod, err)
		return
	}
	if ok {
		r.queue.AddAfter(cache.MetaObjectToName(pod), until.Sub(r.now()))
	}
}

// reportMalformed logs a label that holds no time, once per pod and value;
// such a pod is left alone.
func (r *keptReaper) reportMalformed(pod *corev1.Pod, err error) {
	v := pod.Labels[vocab.LabelKeptUntil]
	r.mu.Lock()
	seen := r.malformed[pod.UID] == v
	r.malformed[pod.UID] = v
	r.mu.Unlock()
	if seen {
		return
	}
	r.metrics.reaped.WithLabelValues("malformed").Inc()
	r.log.WithFields(logrus.Fields{"namespace": pod.Namespace, "pod": pod.Name, "label": vocab.LabelKeptUntil + "=" + v}).WithError(err).
		Warn("not deleting an executor whose kept-until label holds no Unix time; fix or remove the label")
}

func (r *keptReaper) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		r.mu.Lock()
		delete(r.malformed, pod.UID)
		r.mu.Unlock()
	}
}

// next handles one queued pod; false once the queue is shut down.
func (r *keptReaper) next(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if r.reap(ctx, key) {
		r.queue.Forget(key)
	} else {
		r.queue.AddRateLimited(key)
	}
	return true
}

// reap deletes the pod key names if its window has ended, and tells
// whether it is done with it.
func (r *keptReaper) reap(ctx context.Context, key cache.ObjectName) bool {
	lister, ok := r.listers[key.Namespace]
	if !ok {
		lister = r.listers[metav1.NamespaceAll]
	}
	pod, err := lister.Pods(key.Namespace).Get(key.Name)
	if err != nil || pod.DeletionTimestamp != nil {
		return true // gone or going
	}
	until, ok, err := keptUntil(pod)
	if !ok || err != nil {
		return true // no longer kept, or malformed (schedule logged it)
	}
	if wait := until.Sub(r.now()); wait > 0 {
		r.queue.AddAfter(key, wait)
		return true
	}
	call, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = r.client.CoreV1().Pods(pod.Namespace).Delete(call, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	late := r.now().Sub(until)
	fields := logrus.Fields{"namespace": pod.Namespace, "pod": pod.Name, "keptUntil": until.UTC().Format(time.RFC3339), "late": late.Round(time.Millisecond).String()}
	switch {
	case err == nil:
		r.metrics.reaped.WithLabelValues("deleted").Inc()
		r.metrics.late.Observe(late.Seconds())
		r.log.WithFields(fields).Info("deleted a failed executor kept for its logs: its window ended")
		return true
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Deleted already, by the sidecar or another replica.
		r.metrics.reaped.WithLabelValues("gone").Inc()
		r.log.WithFields(fields).Debug("a kept executor was already deleted")
		return true
	default:
		r.metrics.reaped.WithLabelValues("error").Inc()
		r.log.WithFields(fields).WithError(err).Warn("could not delete a kept failed executor; retrying")
		return false
	}
}

// reaperMetrics are the keptReaper's metrics.
type reaperMetrics struct {
	reaped *prometheus.CounterVec
	late   prometheus.Histogram
}

func newReaperMetrics(reg prometheus.Registerer) *reaperMetrics {
	m := &reaperMetrics{
		reaped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sparklet_kept_executors_reaped_total",
			Help: "Failed executors kept for their logs, handled when their window ended, by result: deleted, gone (deleted already), error (retried), malformed (a kept-until label that holds no Unix time; left alone).",
		}, []string{"result"}),
		late: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sparklet_kept_executor_delete_delay_seconds",
			Help:    "Time from the end of a kept executor's window to the webhook's delete of it.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
	reg.MustRegister(m.reaped, m.late)
	return m
}
