package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// followAll follows several drivers at once (see follow), all timed from
// start.
func followAll(ctx context.Context, client kubernetes.Interface, drivers []*corev1.Pod, sparkContainers []string, start time.Time) ([]*run, error) {
	runs := make([]*run, len(drivers))
	errs := make([]error, len(drivers))
	var wg sync.WaitGroup
	for i := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i], errs[i] = follow(ctx, client, drivers[i], sparkContainers[i], start)
		}()
	}
	wg.Wait()
	return runs, errors.Join(errs...)
}

// run is what follow saw of one driver pod and its application.
type run struct {
	Pod         *corev1.Pod // the driver pod in its final phase
	Executors   int         // executor pods seen Running
	DriverEnded time.Time   // the Spark container seen terminated
	LastGone    time.Time   // the application's last executor pod or ConfigMap seen deleted
}

// follow watches the namespace from start until the driver pod has
// finished and its executors and executor ConfigMaps are gone, printing
// each step with the time since start: the sidecar ready, the driver
// running, each executor Running, the driver's exit, the pod's phase, each
// executor and ConfigMap deleted.
func follow(ctx context.Context, client kubernetes.Interface, driver *corev1.Pod, sparkContainer string, start time.Time) (*run, error) {
	ns := driver.Namespace
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	appID := driver.Labels[vocab.LabelAppID]
	byApp := metav1.ListOptions{LabelSelector: vocab.LabelAppID + "=" + appID}
	cmList, err := client.CoreV1().ConfigMaps(ns).List(ctx, byApp)
	if err != nil {
		return nil, err
	}
	byApp.ResourceVersion = cmList.ResourceVersion
	cmWatch, err := client.CoreV1().ConfigMaps(ns).Watch(ctx, byApp)
	if err != nil {
		return nil, err
	}
	defer cmWatch.Stop()
	f := &follower{run: &run{}, driver: driver.Name, appID: appID, spark: sparkContainer, start: start,
		seen: map[string]bool{}, live: map[string]bool{}, configMaps: map[string]bool{}}
	for i := range list.Items {
		f.observe(watch.Added, &list.Items[i])
	}
	for i := range cmList.Items {
		f.observeConfigMap(watch.Added, &cmList.Items[i])
	}
	for !f.done() {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("following %s (finished: %v, executors left %v, ConfigMaps left %v): %w",
				driver.Name, f.Pod != nil, slices.Sorted(maps.Keys(f.live)), slices.Sorted(maps.Keys(f.configMaps)), ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("the watch on %s's pods closed", ns)
			}
			if p, ok := ev.Object.(*corev1.Pod); ok {
				f.observe(ev.Type, p)
			}
		case ev, ok := <-cmWatch.ResultChan():
			if !ok {
				return nil, fmt.Errorf("the watch on %s's ConfigMaps closed", ns)
			}
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				f.observeConfigMap(ev.Type, cm)
			}
		}
	}
	return f.run, nil
}

type follower struct {
	*run
	driver, spark string
	start         time.Time
	appID         string
	sidecarReady  bool
	confDone      bool
	driverRunning bool
	seen          map[string]bool // executors seen Running
	live          map[string]bool // executors not yet deleted
	configMaps    map[string]bool // the application's ConfigMaps not yet deleted
}

func (f *follower) done() bool {
	return f.Pod != nil && len(f.live) == 0 && len(f.configMaps) == 0
}

func (f *follower) observeConfigMap(t watch.EventType, cm *corev1.ConfigMap) {
	switch {
	case t == watch.Deleted && f.configMaps[cm.Name]:
		delete(f.configMaps, cm.Name)
		f.LastGone = time.Now()
		f.mark("ConfigMap %s deleted", cm.Name)
	case t == watch.Added:
		f.configMaps[cm.Name] = true
		f.mark("ConfigMap %s created (the executors' Spark conf)", cm.Name)
	}
}

func (f *follower) mark(format string, args ...any) {
	say("%6.1fs  %-18s  "+format, append([]any{time.Since(f.start).Seconds(), f.driver}, args...)...)
}

func (f *follower) observe(t watch.EventType, p *corev1.Pod) {
	if p.Name == f.driver {
		f.observeDriver(p)
		return
	}
	if p.Labels[vocab.LabelRole] != "executor" || p.Labels[vocab.LabelAppID] != f.appID {
		return
	}
	switch {
	case t == watch.Deleted:
		if f.live[p.Name] {
			delete(f.live, p.Name)
			f.LastGone = time.Now()
			f.mark("executor %s deleted", p.Name)
		}
	case p.Status.Phase == corev1.PodRunning && !f.seen[p.Name]:
		f.seen[p.Name], f.live[p.Name] = true, true
		f.Executors++
		f.mark("executor %s Running, pod IP %s", p.Name, p.Status.PodIP)
	case !f.seen[p.Name]:
		f.live[p.Name] = true
	}
}

func (f *follower) observeDriver(p *corev1.Pod) {
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name == patches.SidecarName && s.Started != nil && *s.Started && !f.sidecarReady {
			f.sidecarReady = true
			f.mark("sidecar running; the conf init container after it waits for it to listen")
		}
		if s.Name == patches.ConfInitName && s.Started != nil && *s.Started && !f.confDone {
			f.confDone = true
			f.mark("conf init container started (its postStart hook returned): the sidecar listens and the Spark conf is written, so the Spark container starts")
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name != f.spark {
			continue
		}
		if s.State.Running != nil && !f.driverRunning {
			f.driverRunning = true
			f.mark("Spark container running: spark-submit --deploy-mode client, spark.master k8s://127.0.0.1 (the sidecar)")
		}
		if s.State.Terminated != nil && f.DriverEnded.IsZero() {
			f.DriverEnded = time.Now()
			f.mark("Spark container exited with code %d", s.State.Terminated.ExitCode)
		}
	}
	if f.Pod == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
		f.Pod = p.DeepCopy()
		f.mark("pod %s", p.Status.Phase)
	}
}
