package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/patches"
)

// restrictedSparkContext is what the Spark container of an apache/spark
// image needs under Pod Security restricted: runAsUser, because the image
// names its user (USER spark), which the kubelet cannot check as non-root.
const restrictedSparkContext = `    securityContext:
      runAsNonRoot: true
      runAsUser: 185
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
      seccompProfile: {type: RuntimeDefault}
`

// enforceRestricted puts ns at Pod Security restricted for t, and back
// as it was after.
func enforceRestricted(ctx context.Context, t *testing.T, ns string) {
	const key = "pod-security.kubernetes.io/enforce"
	n, err := cp.Client().CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, had := n.Labels[key]
	kubectl(ctx, t, "label", "--overwrite", "namespace", ns, key+"=restricted")
	t.Cleanup(func() {
		restore := key + "-"
		if had {
			restore = key + "=" + before
		}
		kubectl(context.Background(), t, "label", "--overwrite", "namespace", ns, restore)
	})
}

// restrictedSparkPi runs stock SparkPi 4.3.0 with two executors, for
// real, in ns at Pod Security restricted: the driver's Spark container
// has the context above and nothing else asks for one. The API server
// admits the driver and every container sparklet injects, and the
// executors the sidecar creates, which get the driver's Spark container's
// context; else the JVM would wait for executors the API server refuses.
func restrictedSparkPi(ctx context.Context, t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	enforceRestricted(ctx, t, ns)
	const name = "spark-pi-restricted"
	pod := sparkPi430Pod(name, 2) + restrictedSparkContext
	start := time.Now()
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(pod))
	t.Cleanup(func() { removeDriver(t, ns, name) })
	waitPodPhase(ctx, t, ns, name, corev1.PodSucceeded)
	logs := podLogs(ctx, t, ns, name, "spark")
	if !strings.Contains(logs, "Pi is roughly 3.1") || !strings.Contains(logs, "Registered executor") {
		t.Errorf("driver log has no result or no executor:\n%s", tail(logs, 40))
	}
	t.Logf("SparkPi 4.3.0 at Pod Security restricted: kubectl apply to Succeeded in %s, %d executors registered",
		time.Since(start).Round(100*time.Millisecond), strings.Count(logs, "Registered executor"))
}

// nonRootByName creates, for real, a driver that must run as non-root
// but names no uid, in ns at Pod Security restricted: the webhook warns
// at admission, and the kubelet indeed refuses the apache/spark image's
// user by name, first in the conf init container, which runs with the
// Spark container's context.
func nonRootByName(ctx context.Context, t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	enforceRestricted(ctx, t, ns)
	const name = "spark-pi-nonroot-by-name"
	pod := sparkPi430Pod(name, 1) + strings.Replace(restrictedSparkContext, "      runAsUser: 185\n", "", 1)
	out := kubectl(ctx, t, "-n", ns, "create", "-f", "-", withStdin(pod))
	t.Cleanup(func() { removeDriver(t, ns, name) })
	if !strings.Contains(out, "Warning:") || !strings.Contains(out, "non-numeric user") || !strings.Contains(out, "runAsUser: 185") {
		t.Errorf("kubectl create of a driver with runAsNonRoot and no runAsUser: %q, want the webhook's warning", out)
	}
	var msg string
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Status.Phase != corev1.PodPending {
			return false, fmt.Errorf("pod is %s, want it held Pending by the kubelet", p.Status.Phase)
		}
		for _, s := range p.Status.InitContainerStatuses {
			if w := s.State.Waiting; s.Name == patches.ConfInitName && w != nil && w.Reason == "CreateContainerConfigError" {
				msg = w.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil || !strings.Contains(msg, "non-numeric user") {
		t.Errorf("the kubelet on a driver with runAsNonRoot and no runAsUser: %v %q, want CreateContainerConfigError for the image's non-numeric user", err, msg)
	}
	t.Logf("the kubelet's refusal: %s", msg)
}

// sparkPi430Pod is a SparkPi 4.3.0 driver pod named name, asking for
// executors; a securityContext for its Spark container may follow.
func sparkPi430Pod(name string, executors int) string {
	return "apiVersion: v1\nkind: Pod\n" + strings.Replace(sparkPiTemplate("4.3.0", "2.13", executors), "metadata:\n", "metadata:\n  name: "+name+"\n", 1)
}
