package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/emulator"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/verify"
)

// runEmulator is the demo without JVMs: kwok's fake nodes run the pods, and
// spark-pi's sidecar runs locally with the driver emulator as its JVM. The
// cluster and the webhook keep running afterwards.
func runEmulator(ctx context.Context, bin, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
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
	conf, _ := patches.EffectiveConf(jobPod.Annotations)
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
	say("stop everything with: make cluster-down")
	return nil
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
	conf, _ := patches.EffectiveConf(pod.Annotations)
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
