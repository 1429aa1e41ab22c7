package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/certmanager"
	"github.com/sparklet/sparklet/vocab"
)

// TestCertManagerMode installs the chart as docs/install.md tells a
// platform team, in its default mode, cert-manager, against a real
// cert-manager (v1.21.2's controller, cainjector and webhook,
// test/certmanager, run as processes beside the control plane; its
// webhook validates the chart's Issuers and Certificates). The webhook
// pods run on the real node with the Secret cert-manager writes mounted
// by the kubelet; the cainjector puts the chart's CA into the
// MutatingWebhookConfiguration; the API server injects a driver through
// the Service. Then cert-manager
// renews the serving certificate as `cmctl renew` asks it to: the kubelet
// refreshes the Secret volume on its own sync period, every webhook pod
// serves the new certificate without a restart, and every admission
// meanwhile succeeds.
func TestCertManagerMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	const release, releaseNS, full = "sparklet", "sparklet-system", "sparklet-sparklet"
	cm, err := certmanager.Start(ctx, certmanager.Options{BinDir: binDir, Dir: filepath.Join(filepath.Dir(nd.Dir()), "cert-manager"), Cluster: cp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cert-manager logs:\n%s", cm.Logs(40))
		}
		cm.Stop()
	})
	jobs := createNamespace(ctx, t, "spark-jobs", nil)
	client := cp.Client()

	// docs/install.md with the chart's defaults, the namespace listed so
	// that the chart makes its driver ServiceAccount and `helm test` has
	// a namespace to test.
	started := time.Now()
	helm(ctx, t, "install", release, chartDir(t), "--namespace", releaseNS, "--create-namespace", "--set", "namespaces.list={"+jobs+"}")
	t.Cleanup(func() {
		helm(context.Background(), t, "uninstall", release, "--namespace", releaseNS, "--ignore-not-found")
		// cert-manager leaves the Secrets it wrote (it sets no owner).
		for _, s := range []string{full + "-tls", full + "-ca"} {
			_ = client.CoreV1().Secrets(releaseNS).Delete(context.Background(), s, metav1.DeleteOptions{})
		}
		// The next release in this namespace must not meet these webhook pods.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			left, err := client.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=webhook,app.kubernetes.io/instance=" + release})
			return err == nil && len(left.Items) == 0, nil
		})
		if err != nil {
			t.Errorf("the release's pods outlived helm uninstall: %v", err)
		}
	})
	kubectl(ctx, t, "label", "namespace", jobs, "sparklet.io/inject=enabled")
	kubectl(ctx, t, "-n", releaseNS, "rollout", "status", "deploy/"+full, "--timeout=4m")
	if err := cm.WaitReady(ctx, certmanager.Certificates, releaseNS, full+"-serving", time.Minute); err != nil {
		t.Fatal(err)
	}
	rolledOut := time.Since(started)

	secret, bundle, err := cm.WaitChartCA(ctx, releaseNS, full)
	if err != nil {
		t.Fatal(err)
	}

	pods := webhookPods(ctx, t, releaseNS, full)
	first, err := certmanager.Serial(secret.Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	if err := waitMounted(ctx, pods, secret.Data["tls.crt"]); err != nil {
		t.Fatalf("the kubelet's Secret volume: %v", err)
	}
	svc, err := client.CoreV1().Services(releaseNS).Get(ctx, full, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What the API server dials: every pod, and the Service through the
	// host's route to the node and kube-proxy, by the Service's name.
	serverName := full + "." + releaseNS + ".svc"
	addrs := []string{net.JoinHostPort(svc.Spec.ClusterIP, "443")}
	for _, p := range pods {
		addrs = append(addrs, net.JoinHostPort(p.Status.PodIP, "8443"))
	}
	if err := certmanager.WaitServed(ctx, addrs, bundle, serverName, first); err != nil {
		t.Fatalf("the webhook pods do not serve the Secret's certificate: %v", err)
	}

	helm(ctx, t, "test", release, "--namespace", releaseNS)
	admit := func(ctx context.Context) error { return admitDriver(ctx, jobs) }
	if err := admit(ctx); err != nil {
		t.Fatalf("a driver through the chart's webhook: %v", err)
	}
	t.Logf("helm install to rollout and Certificate Ready in %s", rolledOut.Round(time.Millisecond))

	// Admissions go on through the API server while cert-manager renews.
	admissions := certmanager.Repeat(ctx, 250*time.Millisecond, admit)
	defer admissions.Stop()
	renewed := time.Now()
	renewal, err := cm.RenewAndWait(ctx, releaseNS, full+"-serving", full+"-tls")
	if err != nil {
		t.Fatal(err)
	}
	if renewal.Old.Cmp(first) != 0 {
		t.Fatalf("the Secret changed from serial %x to %x before the renewal", first, renewal.Old)
	}
	// The kubelet rewrites a Secret volume when it next syncs the pod:
	// each pod is requeued after syncFrequency with up to half of it
	// again as jitter, 60 to 90 s by default (kubernetes v1.37.2,
	// pkg/kubelet/pod_workers.go, workerResyncIntervalJitterFactor); the
	// webhook then reloads within its --reload-interval (10 s).
	if err := waitMounted(ctx, pods, renewal.PEM); err != nil {
		t.Fatalf("the kubelet did not refresh the Secret volume: %v", err)
	}
	mounted := time.Since(renewed)
	if err := certmanager.WaitServed(ctx, addrs, bundle, serverName, renewal.New); err != nil {
		t.Fatalf("the webhook pods do not serve the renewed certificate: %v", err)
	}
	served := time.Since(renewed)
	// Each pod's own log, through the kubelet, says it loaded the files
	// again: the same process, not a new one.
	for _, p := range pods {
		if n := strings.Count(podLogs(ctx, t, releaseNS, p.Name, "webhook"), "serving certificate loaded"); n < 2 {
			t.Errorf("webhook pod %s logged %d certificate loads, want the first and the renewed one", p.Name, n)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return admit(ctx) == nil, nil
	})
	ok, failed, lastErr := admissions.Stop()
	if err != nil {
		t.Errorf("drivers are not injected after the renewal: %v", admit(ctx))
	}
	if failed > 0 || ok == 0 {
		t.Errorf("%d of %d admissions during the renewal failed, the last: %v", failed, failed+ok, lastErr)
	}
	checkNotRestarted(ctx, t, releaseNS, pods)
	if err := cm.Running(); err != nil {
		t.Error(err)
	}
	m, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, full, metav1.GetOptions{})
	if err != nil || !bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, bundle) {
		t.Errorf("the caBundle changed with the serving certificate's renewal (the CA did not): %v", err)
	}
	t.Logf("renewal: serial %x -> %x; Secret updated %s after the Issuing condition was set, the kubelet's volumes %s after, every pod and the Service serving it %s after; %d admissions through the API server meanwhile, %d failed",
		renewal.Old, renewal.New, renewal.Took.Round(time.Millisecond), mounted.Round(time.Millisecond), served.Round(time.Millisecond), ok, failed)

	helm(ctx, t, "uninstall", release, "--namespace", releaseNS)
}

// webhookPods are the Deployment's pods, each Running on the real node
// with the Secret volume tls, as many as the Deployment's replicas.
func webhookPods(ctx context.Context, t *testing.T, ns, deployment string) []corev1.Pod {
	t.Helper()
	d, err := cp.Client().AppsV1().Deployments(ns).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := cp.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "sparklet-node" {
			t.Fatalf("webhook pod %s is %s on %q, want Running on the real node", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		pods = append(pods, p)
	}
	if len(pods) != int(*d.Spec.Replicas) {
		t.Fatalf("%d webhook pods, want the Deployment's %d", len(pods), *d.Spec.Replicas)
	}
	return pods
}

// waitMounted waits until the kubelet's Secret volume tls of every pod
// holds certPEM as tls.crt.
func waitMounted(ctx context.Context, pods []corev1.Pod, certPEM []byte) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for i := range pods {
			dir, err := nd.SecretVolume(&pods[i], "tls")
			if err != nil {
				return false, err
			}
			got, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
			if err != nil || !bytes.Equal(got, certPEM) {
				last = fmt.Errorf("pod %s: %s/tls.crt is not the Secret's (%v)", pods[i].Name, dir, err)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

// admitDriver has the API server admit (dry run) a driver pod in ns and
// fails unless sparklet's webhook injected it.
func admitDriver(ctx context.Context, ns string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "driver-", Labels: map[string]string{"spark-role": "driver"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "spark", Image: "apache/spark:4.3.0",
			Args: []string{"driver", "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples_2.13-4.3.0.jar"}}}},
	}
	got, err := cp.Client().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return err
	}
	if got.Annotations[vocab.AnnotationStatus] == "" {
		return errors.New("driver admitted but not injected")
	}
	return nil
}

// checkNotRestarted fails t unless the same pods still run, none of their
// containers restarted.
func checkNotRestarted(ctx context.Context, t *testing.T, ns string, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		now, err := cp.Client().CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || now.UID != p.UID || now.DeletionTimestamp != nil {
			t.Errorf("webhook pod %s was replaced or deleted during the renewal: %v", p.Name, err)
			continue
		}
		for _, c := range now.Status.ContainerStatuses {
			if c.RestartCount != 0 || c.State.Running == nil {
				t.Errorf("webhook pod %s container %s: restartCount %d, state %+v; want 0 and running", p.Name, c.Name, c.RestartCount, c.State)
			}
		}
	}
}
