package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	testenv "github.com/sparklet/sparklet/test/env"
)

// runOnPodRunner is the demo on the pod runner (make demo-pod-runner): the
// example driver pod and Job run on the newest pinned Spark, as local
// processes of the pod runner. Everything stops when it ends (with keep,
// on Ctrl-C): the runner lives in this process.
func runOnPodRunner(ctx context.Context, bin, dir string, keep bool) error {
	d, err := newestSparkAsRoot(bin, "the pod runner needs root: it gives each pod a network namespace of its own on a bridge it creates", "demo-pod-runner")
	if err != nil {
		return err
	}
	steps, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()

	step("Starting a local control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) and the pod runner")
	start := time.Now()
	policy, _ := filepath.Abs("examples/policy.yaml")
	env, err := testenv.Start(steps, testenv.Options{BinDir: bin, Dir: dir, PolicyFile: policy, PodRunner: true})
	if err != nil {
		return err
	}
	defer stopAll(env, dir, keep)
	say("up in %s", time.Since(start).Round(100*time.Millisecond))
	say("the pod runner plays the kubelet for node %s: each pod runs as local processes in a network", testenv.RunnerNode)
	say("namespace of its own, pod IP on bridge %s/24 (docs/pod-runner.md); apache/spark:<version> images run", env.Runner.HostIP())
	say("the pinned Spark distribution of their line from %s (docs/real-spark.md)", filepath.Join(bin, "spark"))
	say("sparklet webhook: %s, policy %s", env.Addr(), "examples/policy.yaml")
	say("registered like the Helm chart: pods CREATE, objectSelector spark-role=driver,")
	say("namespaceSelector sparklet.io/inject=enabled, failurePolicy Fail, %s and kube-system excluded", testenv.WebhookNamespace)

	s := &stage{kube: env, client: env.Client, kubeconfig: env.Cluster.Kubeconfig(), policy: "examples/policy.yaml",
		checkArgs: []string{"--policy", "examples/policy.yaml"},
		driverLog: func(_ context.Context, pod *corev1.Pod, container string) (string, string) {
			file := env.Runner.LogPath(ns, pod.Name, container)
			text, _ := os.ReadFile(file)
			return string(text), "its log: " + file
		}}
	step("Opting in namespace %s", ns)
	if err := env.CreateNamespace(steps, ns, true); err != nil {
		return err
	}
	if err := credentialsSecret(steps, env.Client); err != nil {
		return err
	}
	kubectl(steps, env, "get", "namespace", ns, "--show-labels")
	say("and the Secret object-store-keys, which examples/policy.yaml's credentials hand to drivers and executors")
	sparkletCheck(steps, s, bin, "-n", ns)
	if err := runDrivers(steps, s, bin, d); err != nil {
		return err
	}
	done(ctx, s, keep)
	return nil
}

// stopAll stops the pod runner (its pods, their namespaces and the bridge),
// the webhook and the control plane.
func stopAll(env *testenv.Env, dir string, keep bool) {
	step("Stopping the pod runner, the webhook and the control plane (they live in this process)")
	start := time.Now()
	hostIP := env.Runner.HostIP()
	env.Stop()
	if bridgeLeft(hostIP) {
		say("the pod runner's bridge (%s) is still there; make cluster-down removes it", hostIP)
	} else {
		say("stopped in %s; the pods' processes, network namespaces and the bridge are gone", time.Since(start).Round(100*time.Millisecond))
	}
	say("logs: %s (pods/logs/<namespace>_<pod>_<uid>/<container>.log, podrunner.log, webhook.log, cluster/logs/)", dir)
	if !keep {
		say("hack/demo.sh --pod-runner --keep leaves everything running until Ctrl-C, to look around with kubectl")
	}
}

// bridgeLeft reports whether an interface of the host still has ip.
func bridgeLeft(ip string) bool {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, ok := a.(*net.IPNet); ok && p.IP.String() == ip {
			return true
		}
	}
	return false
}
