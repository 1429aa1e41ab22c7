package schedulers

import (
	"context"
	"errors"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// KueueAdmissions records, from a watch, every pod whose Workload was
// admitted in a namespace, even if the pod and its Workload are gone by
// the time the test looks.
type KueueAdmissions struct {
	mu sync.Mutex
	// admitted maps a pod's name to the ClusterQueue its Workload was
	// admitted into.
	admitted map[string]string
}

// TrackAdmissions watches the Workloads of namespace ns until ctx ends.
func (k *Kueue) TrackAdmissions(ctx context.Context, ns string) (*KueueAdmissions, error) {
	a := &KueueAdmissions{admitted: map[string]string{}}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(k.dyn, 0, ns, nil)
	inf := f.ForResource(kueueResource("workloads")).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.observe,
		UpdateFunc: func(_, obj any) { a.observe(obj) },
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, errors.New("the Workload informer never synced")
	}
	go func() { <-ctx.Done(); f.Shutdown() }()
	return a, nil
}

func (a *KueueAdmissions) observe(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	w, err := kueueWorkloadOf(u)
	if err != nil || !w.Admitted || w.Pod == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.admitted[w.Pod] = w.ClusterQueue
}

// Admitted maps each pod whose Workload was seen admitted to its
// ClusterQueue.
func (a *KueueAdmissions) Admitted() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.admitted)
}
