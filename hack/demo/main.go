// Command demo is `make demo`: it starts the local control plane, installs
// the sparklet webhook as the Helm chart would, runs the example driver pod
// and Job, and shows what sparklet did to them.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/emulator"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/verify"
)

const ns = "spark-demo"

func main() {
	bin := flag.String("bin", "bin", "sparklet and control-plane binaries")
	dir := flag.String("dir", ".cache/demo", "state and logs")
	flag.Parse()
	if err := run(*bin, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "\ndemo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n\033[1m==> "+format+"\033[0m\n", args...) }
func say(format string, args ...any)  { fmt.Printf("    "+format+"\n", args...) }

func run(bin, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, _ = filepath.Abs(bin)
	dir, _ = filepath.Abs(dir)
	_ = cluster.Down(filepath.Join(dir, "cluster")) // a previous demo's
	_ = os.RemoveAll(dir)

	step("Starting a local control plane: etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok")
	start := time.Now()
	policy, _ := filepath.Abs("examples/policy.yaml")
	env, err := testenv.Start(ctx, testenv.Options{BinDir: bin, Dir: dir, PolicyFile: policy, Detach: true})
	if err != nil {
		return err
	}
	say("up in %s; kwok runs 2 fake nodes, so pods go Running without a container runtime", time.Since(start).Round(100*time.Millisecond))
	say("sparklet webhook: %s, policy %s", env.Addr(), "examples/policy.yaml")
	say("registered like the Helm chart: pods CREATE, objectSelector spark-role=driver,")
	say("namespaceSelector sparklet.io/inject=enabled, failurePolicy Fail, %s and kube-system excluded", testenv.WebhookNamespace)

	step("Opting in namespace %s", ns)
	if err := env.CreateNamespace(ctx, ns, true); err != nil {
		return err
	}
	kubectl(ctx, env, "get", "namespace", ns, "--show-labels")

	step("Applying a plain driver pod: examples/spark-pi-pod.yaml")
	kubectl(ctx, env, "apply", "-n", ns, "-f", "examples/spark-pi-pod.yaml")
	pod, err := env.Client.CoreV1().Pods(ns).Get(ctx, "spark-pi", metav1.GetOptions{})
	if err != nil {
		return err
	}
	showInjected(pod)

	step("Applying the same driver as a Job: examples/spark-pi-job.yaml")
	kubectl(ctx, env, "apply", "-n", ns, "-f", "examples/spark-pi-job.yaml")
	var jobPod *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=spark-pi-job"})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		jobPod = &pods.Items[0]
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the Job created no pod: %w", err)
	}
	conf, _ := patches.ParseSparkConf(jobPod.Annotations[patches.AnnotationEffectiveConf])
	say("the Job controller created %s (it had only generateName %q at admission);", jobPod.Name, jobPod.GenerateName)
	say("Spark learns the name at run time: spark.kubernetes.driver.pod.name %s", conf["spark.kubernetes.driver.pod.name"])
	say("problems found by verify.Driver: %d", len(verify.Driver(jobPod)))

	step("Waiting for kwok, which plays the kubelet here, to run both drivers")
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=driver"})
		if err != nil || len(pods.Items) < 2 {
			return false, nil
		}
		for _, p := range pods.Items {
			// kwok completes pods owned by Jobs right away.
			if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("drivers did not reach Running: %w", err)
	}
	kubectl(ctx, env, "get", "pods", "-n", ns, "-o", "wide")
	say("READY counts the native sidecar: 2/2 is the sidecar and the Spark container.")

	if err := runExecutors(ctx, env, pod, filepath.Join(dir, "sidecar")); err != nil {
		return err
	}

	step("A driver the policy refuses: examples/refused-pod.yaml asks for 200 executors (limit 100)")
	kubectl(ctx, env, "apply", "-n", ns, "-f", "examples/refused-pod.yaml")

	step("Done. The control plane and the webhook keep running:")
	say("export KUBECONFIG=%s", env.Cluster.Kubeconfig())
	say("kubectl get pods -n %s", ns)
	say("kubectl get pod spark-pi -n %s -o yaml     # the whole injected pod", ns)
	say("go run ./cmd/sparklet inject -f examples/spark-pi-pod.yaml --policy examples/policy.yaml   # the same, offline")
	say("logs: %s (webhook.log, cluster/logs/)", dir)
	say("stop everything with: make cluster-down DIR=%s", filepath.Join(dir, "cluster"))
	return nil
}

// kubectl runs kubectl as a user would and shows the command and its output.
func kubectl(ctx context.Context, env *testenv.Env, args ...string) {
	fmt.Printf("    $ kubectl %s\n", strings.Join(args, " "))
	out, errOut, _ := env.Kubectl(ctx, nil, args...)
	for _, line := range strings.Split(strings.TrimRight(out+errOut, "\n"), "\n") {
		fmt.Printf("      %s\n", line)
	}
}

func showInjected(pod *corev1.Pod) {
	var st patches.Status
	_ = json.Unmarshal([]byte(pod.Annotations[patches.AnnotationStatus]), &st)
	say("sparklet.io/status: version %s, application id %s, Spark container %q", st.Version, st.AppID, st.SparkContainer)
	fmt.Println()
	say("The sidecar, as a native sidecar (starts before the JVM, never holds up the pod's completion):")
	for _, c := range pod.Spec.InitContainers {
		policy := "-"
		if c.RestartPolicy != nil {
			policy = string(*c.RestartPolicy)
		}
		probe := "none"
		if c.StartupProbe != nil && c.StartupProbe.HTTPGet != nil {
			probe = fmt.Sprintf("GET %s :%s", c.StartupProbe.HTTPGet.Path, c.StartupProbe.HTTPGet.Port.String())
		}
		say("  initContainer %-18s image %s  restartPolicy %s  startupProbe %s", c.Name, c.Image, policy, probe)
	}
	fmt.Println()
	say("Volumes sparklet added:")
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, name := range st.Volumes {
		say("  %-20s %s", name, describeVolume(vols[name]))
	}
	fmt.Println()
	say("Credentials:")
	say("  automountServiceAccountToken: %v", *pod.Spec.AutomountServiceAccountToken)
	for _, v := range st.RemovedVolumes {
		say("  removed %s: the API server's token volume, which every container would have mounted", v)
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		has := "no Kubernetes credential"
		for _, m := range c.VolumeMounts {
			if m.MountPath == patches.ServiceAccount {
				has = "service-account token at " + m.MountPath
			}
			if m.MountPath == patches.JVMDir && c.Name != patches.SidecarName {
				has = "no Kubernetes credential; a per-pod token for the sidecar only, at " + patches.TokenFile
			}
		}
		say("  %-18s %s", c.Name, has)
	}
	fmt.Println()
	say("Effective Spark configuration (annotation sparklet.io/effective-conf, read by the JVM as spark-defaults.conf):")
	conf, _ := patches.ParseSparkConf(pod.Annotations[patches.AnnotationEffectiveConf])
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		say("  %-48s %s", k, conf[k])
	}
	fmt.Println()
	say("Env added to the Spark container: %s", strings.Join(st.Env, ", "))
	if p := verify.Driver(pod); len(p) > 0 {
		say("problems: %v", p)
	}
}

func describeVolume(v corev1.Volume) string {
	switch {
	case v.DownwardAPI != nil:
		return "downward API: the effective Spark conf as " + patches.ConfDir + "/" + patches.ConfFile
	case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
		return "in-memory emptyDir: the JVM's token for the sidecar"
	case v.EmptyDir != nil:
		return "emptyDir: Spark scratch space (SPARK_LOCAL_DIRS)"
	case v.Projected != nil:
		return "projected service-account token, mounted only into the sidecar"
	case v.Secret != nil:
		return "Secret " + v.Secret.SecretName
	case v.ConfigMap != nil:
		return "ConfigMap " + v.ConfigMap.Name
	}
	return ""
}

// runExecutors runs spark-pi's sidecar locally, exactly as the injected
// container would run it, and the driver emulator in the JVM's place.
func runExecutors(ctx context.Context, env *testenv.Env, pod *corev1.Pod, dir string) error {
	step("Running spark-pi's sidecar (sparklet sidecar, with the injected env) and the driver emulator as the JVM")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sc, err := env.NewSidecar(pod, dir)
	if err != nil {
		return err
	}
	if err := sc.Start(ctx); err != nil {
		return err
	}
	conf, _ := patches.ParseSparkConf(pod.Annotations[patches.AnnotationEffectiveConf])
	say("the sidecar serves the JVM on %s (spark.master %s); its log: %s", sc.Listen, conf["spark.master"], sc.LogFile())
	cfg, err := sc.EmulatorConfig(emulator.Spark35)
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(dir, "emulator.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cfg.Log = emulator.JSONLog(logFile)
	jvm, err := emulator.New(cfg)
	if err != nil {
		return err
	}
	say("the driver emulator plays Spark %s's JVM; its log: %s", cfg.Mode, logFile.Name())
	jvmCtx, stopJVM := context.WithCancel(ctx)
	defer stopJVM()
	if err := jvm.Start(jvmCtx); err != nil {
		return err
	}
	const executors = 20
	start := time.Now()
	jvm.SetTarget(executors)
	if err := jvm.WaitRunning(ctx, executors); err != nil {
		return err
	}
	say("%d executors Running in %s (the JVM asks in batches of %d, spark.kubernetes.allocation.batch.size)", executors, time.Since(start).Round(100*time.Millisecond), cfg.BatchSize)
	kubectl(ctx, env, "get", "pods", "-n", ns, "-l", "spark-role=executor", "-L", "spark-exec-id,sparklet.io/managed")
	say("each executor is owned by the driver pod, labelled sparklet.io/managed=true, and has no service-account token")

	step("The JVM dies without calling stop(): the Spark container is reported terminated")
	stopJVM()
	p, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "spark", Image: p.Spec.Containers[0].Image, ImageID: "demo",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: metav1.Now()}}}}
	ended := time.Now()
	if _, err := env.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	select {
	case err := <-sc.Exited():
		say("the sidecar cleaned up and exited (%v) %s after the container ended", exitText(err), time.Since(ended).Round(10*time.Millisecond))
	case <-time.After(time.Minute):
		return fmt.Errorf("the sidecar did not exit after the Spark container ended")
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "spark-role=executor"})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("executors left behind: %w", err)
	}
	kubectl(ctx, env, "get", "pods", "-n", ns, "-l", "spark-role=executor")
	kubectl(ctx, env, "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+pod.Name+",source=sparklet-sidecar",
		"-o", "custom-columns=REASON:.reason,MESSAGE:.message", "--sort-by=.lastTimestamp")
	return nil
}

func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}
