package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/test/node"
	"github.com/sparklet/sparklet/test/nodeenv"
)

// nodePolicy is the chart's policy on the real node: examples/policy.yaml's
// rules with executors small enough for a node of two cores.
const nodePolicy = "examples/two-core-node-policy.yaml"

// runOnNode is the demo on a real node: the kubelet, containerd, kube-proxy
// and CoreDNS of docs/real-node.md, the chart installed with helm as
// docs/install.md tells, and the same drivers as on the pod runner, run as
// containers of the apache/spark image built here. Everything stops when
// it ends (with keep, on Ctrl-C).
func runOnNode(ctx context.Context, bin, dir string, keep bool) error {
	d, err := newestSparkAsRoot(bin, "the real node needs root: it runs containerd, runc and the kubelet in a network namespace of its own", "demo")
	if err != nil {
		return err
	}
	began := time.Now()

	step("Starting a local control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) and a real node")
	say("(one real node runs on a machine at a time; if another holds %s, this waits for it)", "/run/sparklet-node.lock")
	// No deadline: the wait for another node's lock may be long; the
	// start's own waits time out.
	env, err := nodeenv.Start(ctx, nodeenv.Options{BinDir: bin, Dir: dir, SparkVersions: []string{d.Version}})
	if err != nil {
		return err
	}
	steps, cancel := context.WithTimeout(ctx, 12*time.Minute)
	defer cancel()
	defer stopNode(env, dir, keep, began)
	if env.NodeWait > time.Second {
		say("waited %s for another real node to stop", env.NodeWait.Round(time.Second))
	}
	say("control plane up in %s; node %s Ready with cluster DNS %s later", env.ControlPlaneUp.Round(100*time.Millisecond), node.Name, env.NodeUp.Round(100*time.Millisecond))
	say("the node: kubelet and kube-proxy %s, containerd 2 with Debian's runc, CNI bridge pod IPs in %s,", serverVersion(env), node.PodCIDR)
	say("CoreDNS for cluster.local, in network namespace %s (docs/real-node.md); containerd pulls from no", node.NetNS)
	say("registry: it imported the pause, kubectl, sparklet and apache/spark:%s images built by make node-images", d.Version)
	kubectl(steps, env, "get", "nodes", "-o", "wide")

	step("Installing the chart as docs/install.md tells a platform team (self-managed TLS), its policy %s", nodePolicy)
	if err := env.InstallChart(steps, nodeenv.Install{Chart: "charts/sparklet", PolicyFile: nodePolicy, Namespaces: []string{ns}}, showHelm); err != nil {
		return err
	}
	kubectl(steps, env, "get", "pods", "-n", nodeenv.ReleaseNamespace, "-o", "wide")
	say("the webhook's pods are containers of the image make image built, as the chart runs them:")
	say("user 65532, read-only root filesystem, every capability dropped, a memory limit")
	out, err := env.Helm(steps, "test", nodeenv.Release, "--namespace", nodeenv.ReleaseNamespace)
	showHelm("helm test "+nodeenv.Release+" --namespace "+nodeenv.ReleaseNamespace, out)
	if err != nil {
		return err
	}

	s := &stage{kube: env, client: env.Client, kubeconfig: env.Cluster.Kubeconfig(), policy: nodePolicy,
		driverLog: func(ctx context.Context, pod *corev1.Pod, container string) (string, string) {
			text, err := env.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
			how := fmt.Sprintf("kubectl logs %s -c %s -n %s", pod.Name, container, ns)
			if err != nil {
				how += ": " + err.Error()
			}
			return string(text), how
		}}
	step("Namespace %s is opted in, and the chart made its driver ServiceAccount", ns)
	kubectl(steps, env, "get", "namespace", ns, "--show-labels")
	kubectl(steps, env, "get", "serviceaccount", "spark-driver", "-n", ns)
	sparkletCheck(steps, s, bin, "-n", ns)
	if err := runDrivers(steps, s, bin, d); err != nil {
		return err
	}
	done(ctx, s, keep)
	return nil
}

// stopNode stops the real node, its pods and containers with it, and the
// control plane, and says how long the demo took from began.
func stopNode(env *nodeenv.Env, dir string, keep bool, began time.Time) {
	step("Stopping the real node and the control plane")
	start := time.Now()
	env.Stop()
	say("stopped in %s; the node's containers, network namespace and cgroups are gone", time.Since(start).Round(100*time.Millisecond))
	say("the demo took %s from start to here, not counting %s waiting for another real node",
		(time.Since(began) - env.NodeWait).Round(time.Second), env.NodeWait.Round(time.Second))
	say("logs: %s (node/logs/ for the kubelet, containerd, kube-proxy and CoreDNS; node/pod-logs/; cluster/logs/)", dir)
	if !keep {
		say("hack/demo.sh --keep leaves everything running until Ctrl-C, to look around with kubectl")
	}
}

// serverVersion is the control plane's Kubernetes version, which the
// node's kubelet and kube-proxy share.
func serverVersion(env *nodeenv.Env) string {
	v, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		return "?"
	}
	return v.GitVersion
}

// showHelm is showCommand with the chart's NOTES, which helm prints after
// every install and test, cut to a line that says where they are.
func showHelm(command, output string) {
	if before, notes, ok := strings.Cut(output, "\nNOTES:\n"); ok {
		output = fmt.Sprintf("%s\nNOTES: %d lines (helm get notes %s -n %s)\n", before, strings.Count(notes, "\n"), nodeenv.Release, nodeenv.ReleaseNamespace)
	}
	showCommand(command, output)
}
