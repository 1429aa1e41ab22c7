package podrunner

import (
	"context"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

const (
	leaseSeconds    = 40
	heartbeatPeriod = 10 * time.Second
)

// registerNode creates the Node (or takes over one of the same name) and
// reports it Ready.
func (r *Runner) registerNode(ctx context.Context) error {
	labels := map[string]string{
		"kubernetes.io/hostname": r.opts.NodeName,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"sparklet.io/podrunner":  "true",
	}
	for k, v := range r.opts.Labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: r.opts.NodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: r.opts.Taints},
	}
	_, err := r.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("podrunner: register node %s: %w", r.opts.NodeName, err)
	}
	if err := r.renewLease(ctx); err != nil {
		return err
	}
	return r.updateNodeStatus(ctx)
}

// heartbeat keeps the node's lease and Ready condition fresh, as the
// kubelet does, until the runner stops.
func (r *Runner) heartbeat() {
	t := time.NewTicker(heartbeatPeriod)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		if err := r.renewLease(r.ctx); err != nil && r.ctx.Err() == nil {
			r.log.Printf("renew lease: %v", err)
		}
		if err := r.updateNodeStatus(r.ctx); err != nil && r.ctx.Err() == nil {
			r.log.Printf("update node status: %v", err)
		}
	}
}

func (r *Runner) renewLease(ctx context.Context) error {
	leases := r.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, r.opts.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node, err := r.client.CoreV1().Nodes().Get(ctx, r.opts.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: r.opts.NodeName, Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(r.opts.NodeName),
				LeaseDurationSeconds: ptr.To(int32(leaseSeconds)), RenewTime: &now},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.HolderIdentity = ptr.To(r.opts.NodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(leaseSeconds))
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

func (r *Runner) updateNodeStatus(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return r.tryNodeStatus(ctx) })
}

func (r *Runner) tryNodeStatus(ctx context.Context) error {
	node, err := r.client.CoreV1().Nodes().Get(ctx, r.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	hostname, _ := os.Hostname()
	now := metav1.Now()
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "pod runner is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}
	conds := []corev1.NodeCondition{ready}
	for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		conds = append(conds, corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficient" + string(t)[:len(t)-len("Pressure")],
			LastHeartbeatTime: now, LastTransitionTime: now})
	}
	for i := range conds {
		for _, old := range node.Status.Conditions {
			if old.Type == conds[i].Type && old.Status == conds[i].Status {
				conds[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	node.Status.Conditions = conds
	node.Status.Capacity = r.opts.Capacity
	node.Status.Allocatable = r.opts.Capacity
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: r.HostIP()},
		{Type: corev1.NodeHostName, Address: hostname},
	}
	node.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64",
		KubeletVersion: "v0.0.0-podrunner", ContainerRuntimeVersion: "podrunner://0"}
	_, err = r.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// waitSchedulable waits until the node lifecycle controller has lifted the
// not-ready taint it puts on new nodes.
func (r *Runner) waitSchedulable(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := r.client.CoreV1().Nodes().Get(ctx, r.opts.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, t := range node.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("podrunner: node %s did not become schedulable: %w", r.opts.NodeName, err)
	}
	return nil
}
