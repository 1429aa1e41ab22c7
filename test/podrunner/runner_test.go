package podrunner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// waitLog waits until a container's log contains s.
func waitLog(ctx context.Context, t *testing.T, pod, container, s string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return strings.Contains(logOf(pod, container), s), nil
	})
	if err != nil {
		t.Fatalf("%s/%s never logged %q: %v\n%s", pod, container, s, err, logOf(pod, container))
	}
}

func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

func TestContainersShareLoopback(t *testing.T) {
	ctx := e2e(t)
	pod := shellPod("loopback",
		"echo hello-over-loopback > /www/index.txt && exec python3 -m http.server 8080 --bind 127.0.0.1 --directory /www",
		"for i in $(seq 100); do curl -sf http://127.0.0.1:8080/index.txt && exit 0; sleep 0.1; done; exit 1")
	pod.Spec.Volumes = []corev1.Volume{emptyDir("www")}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "www", MountPath: "/www"}}
	create(ctx, t, pod)
	p := waitPod(ctx, t, pod.Name, "the client to finish", func(p *corev1.Pod) bool {
		return containerStatus(p, "c1").State.Terminated != nil
	})
	if s := containerStatus(p, "c1"); s.State.Terminated.ExitCode != 0 {
		t.Fatalf("client exited %d:\n%s", s.State.Terminated.ExitCode, describe(p))
	}
	if got := logOf(pod.Name, "c1"); !strings.Contains(got, "hello-over-loopback") {
		t.Errorf("client log %q", got)
	}
	if p.Status.Phase != corev1.PodRunning || containerStatus(p, "c0").State.Running == nil {
		t.Errorf("the server should still run:\n%s", describe(p))
	}
}

func TestPodsTalkByPodIP(t *testing.T) {
	ctx := e2e(t)
	server := shellPod("ip-server", "echo hello-by-pod-ip > /www/index.txt && exec python3 -m http.server 8081 --directory /www")
	server.Spec.Volumes = []corev1.Volume{emptyDir("www")}
	server.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "www", MountPath: "/www"}}
	create(ctx, t, server)
	s := waitPod(ctx, t, server.Name, "a pod IP", func(p *corev1.Pod) bool { return p.Status.PodIP != "" })

	client := shellPod("ip-client", "for i in $(seq 100); do curl -sf http://$TARGET:8081/index.txt && exit 0; sleep 0.1; done; exit 1")
	client.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TARGET", Value: s.Status.PodIP}}
	create(ctx, t, client)
	c := waitPod(ctx, t, client.Name, "Succeeded", phase(corev1.PodSucceeded))
	if got := logOf(client.Name, "c0"); !strings.Contains(got, "hello-by-pod-ip") {
		t.Errorf("client log %q", got)
	}
	if c.Status.PodIP == s.Status.PodIP || c.Status.HostIP != runner.HostIP() {
		t.Errorf("pod IPs %s and %s, host IP %s (want %s)", s.Status.PodIP, c.Status.PodIP, c.Status.HostIP, runner.HostIP())
	}
}

func TestEnv(t *testing.T) {
	ctx := e2e(t)
	if _, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "env-cm"}, Data: map[string]string{"color": "blue", "size": "xl"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "env-secret"}, Data: map[string][]byte{"token": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := shellPod("env", "env")
	pod.Labels = map[string]string{"team": "spark"}
	c := &pod.Spec.Containers[0]
	c.Command = []string{"/bin/sh", "-c", "echo ARG=$1; env", "sh", "$(GREETING)"}
	c.Resources.Limits = corev1.ResourceList{"memory": resource.MustParse("512Mi")}
	c.EnvFrom = []corev1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}}}}
	c.Env = []corev1.EnvVar{
		{Name: "GREETING", Value: "hi-$(CM_color)"},
		{Name: "OVERRIDDEN", Value: "container"},
		field("POD_IP", "status.podIP"),
		field("POD_NAME", "metadata.name"),
		field("TEAM", "metadata.labels['team']"),
		{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "token"}}},
	}
	create(ctx, t, pod)
	p := waitPod(ctx, t, pod.Name, "Succeeded", phase(corev1.PodSucceeded))
	env := logValues(pod.Name, "c0")
	for k, want := range map[string]string{
		"ARG": "hi-blue", "GREETING": "hi-blue", "CM_size": "xl", "OVERRIDDEN": "container", "IMAGE_ONLY": "from-image",
		"POD_IP": p.Status.PodIP, "POD_NAME": "env", "TEAM": "spark", "MEM_MI": "512", "TOKEN": "s3cret",
		"KUBERNETES_SERVICE_HOST": runner.HostIP(), "KUBERNETES_SERVICE_PORT": fmt.Sprint(runner.APIServerPort()),
		"PATH": "/usr/bin:/bin",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
}

func TestVolumes(t *testing.T) {
	ctx := e2e(t)
	if _, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "vol-cm"}, Data: map[string]string{"a": "A-value", "b": "B-value"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "vol-secret"}, Data: map[string][]byte{"s": []byte("S-value")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	script := `set -e
echo scratch-ok > /scratch/f; echo "scratch=$(cat /scratch/f)"
grep -q " /mem tmpfs " /proc/mounts && echo mem=tmpfs
echo "conf-link=$(readlink /etc/podinfo/conf)"
echo "conf=$(cat /etc/podinfo/conf)"
echo "labels=$(cat /etc/podinfo/labels)"
if touch /etc/podinfo/x 2>/dev/null; then echo podinfo=writable; else echo podinfo=readonly; fi
if touch /scratch-ro/x 2>/dev/null; then echo scratch-ro=writable; else echo scratch-ro=readonly; fi
echo "cm-a=$(cat /etc/cm/sub/a.txt) mode=$(stat -L -c %a /etc/cm/sub/a.txt)"
echo "cm-b=$(cat /etc/cm/b 2>/dev/null || echo absent)"
echo "secret=$(cat /etc/sec/s) mode=$(stat -L -c %a /etc/sec/s)"
echo "optional=$(ls /etc/opt | wc -l)"
echo "subpath=$(cat /etc/sub/a.txt)"
echo "ns=$(cat /var/run/proj/namespace)"
echo "ca=$(head -1 /var/run/proj/ca.crt)"
echo "token=$(cut -d. -f2 /var/run/proj/token)"
echo waiting-for-update
for i in $(seq 600); do
  if grep -q v2 /etc/podinfo/conf; then echo "updated=$(cat /etc/podinfo/conf)"; exit 0; fi
  sleep 0.1
done
exit 1`
	pod := shellPod("volumes", script)
	pod.Annotations = map[string]string{"example.com/conf": "spark.x=v1"}
	pod.Labels = map[string]string{"app": "vol"}
	yes := true
	expiry := int64(3600)
	mode0600, mode0400 := int32(0o600), int32(0o400)
	pod.Spec.Volumes = []corev1.Volume{
		emptyDir("scratch"),
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "conf", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['example.com/conf']"}},
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}},
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"},
			Items:                []corev1.KeyToPath{{Key: "a", Path: "sub/a.txt", Mode: &mode0600}},
		}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret", DefaultMode: &mode0400}}},
		{Name: "opt", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "no-such-secret", Optional: &yes}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "example-audience", ExpirationSeconds: &expiry}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "scratch", MountPath: "/scratch-ro", ReadOnly: true},
		{Name: "mem", MountPath: "/mem"},
		{Name: "podinfo", MountPath: "/etc/podinfo"},
		{Name: "cm", MountPath: "/etc/cm"},
		{Name: "cm", MountPath: "/etc/sub", SubPath: "sub"},
		{Name: "sec", MountPath: "/etc/sec"},
		{Name: "opt", MountPath: "/etc/opt"},
		{Name: "proj", MountPath: "/var/run/proj"},
	}
	create(ctx, t, pod)
	waitLog(ctx, t, pod.Name, "c0", "waiting-for-update")

	patch := []byte(`{"metadata":{"annotations":{"example.com/conf":"spark.x=v2"}}}`)
	if _, err := client.CoreV1().Pods(namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(ctx, t, pod.Name, "Succeeded", phase(corev1.PodSucceeded))
	out := logValues(pod.Name, "c0")
	for k, want := range map[string]string{
		"scratch": "scratch-ok", "mem": "tmpfs", "conf-link": "..data/conf", "conf": "spark.x=v1",
		"labels": `app="vol"`, "podinfo": "readonly", "scratch-ro": "readonly",
		"cm-a": "A-value mode=600", "cm-b": "absent", "secret": "S-value mode=400", "optional": "0",
		"subpath": "A-value", "ns": namespace, "ca": "-----BEGIN CERTIFICATE-----", "updated": "spark.x=v2",
	} {
		if out[k] != want {
			t.Errorf("%s = %q, want %q", k, out[k], want)
		}
	}
	payload, err := base64.RawURLEncoding.DecodeString(out["token"])
	if err != nil {
		t.Fatalf("token payload %q: %v", out["token"], err)
	}
	var claims struct {
		Aud []string `json:"aud"`
		K8s struct {
			Pod struct {
				Name string `json:"name"`
				UID  string `json:"uid"`
			} `json:"pod"`
		} `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if len(claims.Aud) != 1 || claims.Aud[0] != "example-audience" || claims.K8s.Pod.Name != pod.Name || claims.K8s.Pod.UID != string(p.UID) {
		t.Errorf("token claims %s: want audience example-audience, bound to pod %s/%s", payload, pod.Name, p.UID)
	}
}

func TestNativeSidecarStartsFirst(t *testing.T) {
	ctx := e2e(t)
	pod := shellPod("sidecar", "test -f /shared/ready && curl -sf -o /dev/null http://127.0.0.1:9090/ && echo sidecars-were-up")
	always := corev1.ContainerRestartPolicyAlways
	web := shellContainer("web", "sleep 1; exec python3 -m http.server 9090 --directory /tmp")
	web.RestartPolicy = &always
	web.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 9090}}
	web.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
		PeriodSeconds: 1, FailureThreshold: 30}
	web.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9090)}}, PeriodSeconds: 1}
	marker := shellContainer("marker", "sleep 1; touch /shared/ready; exec sleep 600")
	marker.RestartPolicy = &always
	marker.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/shared/ready"}}},
		PeriodSeconds: 1, FailureThreshold: 30}
	marker.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	pod.Spec.InitContainers = []corev1.Container{web, marker}
	pod.Spec.Volumes = []corev1.Volume{emptyDir("shared")}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	create(ctx, t, pod)
	p := waitPod(ctx, t, pod.Name, "Succeeded", phase(corev1.PodSucceeded))
	if got := logOf(pod.Name, "c0"); !strings.Contains(got, "sidecars-were-up") {
		t.Errorf("main container log %q:\n%s", got, describe(p))
	}
	for _, name := range []string{"web", "marker"} {
		s := containerStatus(p, name)
		if s.State.Terminated == nil || s.RestartCount != 0 {
			t.Errorf("sidecar %s should be stopped after the main container, never restarted: %+v", name, s)
		}
	}
}

// A native sidecar without a startup probe counts as started only once its
// postStart hook has returned, as on the kubelet, so the hook holds the
// next container back.
func TestPostStartHoldsTheNextContainer(t *testing.T) {
	ctx := e2e(t)
	pod := shellPod("poststart", "test -f /shared/ready && echo held-until-ready")
	always := corev1.ContainerRestartPolicyAlways
	side := shellContainer("side", "sleep 1; touch /shared/ready; exec sleep 600")
	side.RestartPolicy = &always
	side.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
		Command: []string{"/bin/sh", "-c", "while [ ! -f /shared/ready ]; do sleep 0.05; done"}}}}
	side.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	pod.Spec.InitContainers = []corev1.Container{side}
	pod.Spec.Volumes = []corev1.Volume{emptyDir("shared")}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	create(ctx, t, pod)
	p := waitPod(ctx, t, pod.Name, "ended", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if got := logOf(pod.Name, "c0"); p.Status.Phase != corev1.PodSucceeded || !strings.Contains(got, "held-until-ready") {
		t.Errorf("phase %s, main container log %q: it started before the hook returned\n%s", p.Status.Phase, got, describe(p))
	}
}

// TestContainersShareOneCPUGroup: a container's processes, and what they
// fork, weigh as one group against a real node's pods (cpugroup.go).
func TestContainersShareOneCPUGroup(t *testing.T) {
	if _, err := os.Stat(cpuHierarchy + "/cgroup.procs"); err != nil {
		t.Skipf("no cgroup v1 cpu hierarchy here: %v", err)
	}
	ctx := e2e(t)
	pod := shellPod("cpugroup", "sh -c 'grep -E \"^[0-9]+:([a-z,]*,)?cpu(,[a-z,]*)?:\" /proc/self/cgroup'")
	create(ctx, t, pod)
	p := waitPod(ctx, t, pod.Name, "Succeeded", phase(corev1.PodSucceeded))
	if got := strings.TrimSpace(logOf(pod.Name, "c0")); !strings.HasSuffix(got, ":"+cpuGroupName) {
		t.Errorf("a container's child is in cpu group %q, want %s\n%s", got, cpuGroupName, describe(p))
	}
}

func TestRestartOnFailure(t *testing.T) {
	ctx := e2e(t)
	pod := shellPod("onfailure", "if [ -f /data/once ]; then echo second-run; exit 0; fi; touch /data/once; echo first-run; exit 1")
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	pod.Spec.Volumes = []corev1.Volume{emptyDir("data")}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	create(ctx, t, pod)
	p := waitPod(ctx, t, pod.Name, "Succeeded", phase(corev1.PodSucceeded))
	s := containerStatus(p, "c0")
	if s.RestartCount != 1 || s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("want one restart after exit 1: %+v", s)
	}
	if got := logOf(pod.Name, "c0"); !strings.Contains(got, "first-run\nsecond-run") {
		t.Errorf("log should hold both runs: %q", got)
	}
}

// job runs a one-container Job on the runner's node through the scheduler
// and the Job controller and returns the Job once it finished.
func job(ctx context.Context, t *testing.T, name, script string) (*batchv1.Job, *corev1.Pod) {
	t.Helper()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To(int32(0)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector:  map[string]string{"kubernetes.io/hostname": nodeName},
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: shellImage, Command: []string{"/bin/sh", "-c", script},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}},
		}}},
	}
	if _, err := client.BatchV1().Jobs(namespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.BatchV1().Jobs(namespace).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	})
	var done *batchv1.Job
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				done = got
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("job %s did not finish: %v", name, err)
	}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("job %s pods: %v, %v", name, pods, err)
	}
	return done, &pods.Items[0]
}

func jobCondition(j *batchv1.Job) batchv1.JobConditionType {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

func TestJobSucceeds(t *testing.T) {
	ctx := e2e(t)
	j, p := job(ctx, t, "job-ok", "echo done")
	if jobCondition(j) != batchv1.JobComplete || p.Status.Phase != corev1.PodSucceeded || p.Spec.NodeName != nodeName {
		t.Errorf("job %v, pod on %q:\n%s", j.Status.Conditions, p.Spec.NodeName, describe(p))
	}
}

func TestJobFails(t *testing.T) {
	ctx := e2e(t)
	j, p := job(ctx, t, "job-fail", "echo first-line; echo last-words >&2; exit 3")
	if jobCondition(j) != batchv1.JobFailed || p.Status.Phase != corev1.PodFailed {
		t.Fatalf("job %v:\n%s", j.Status.Conditions, describe(p))
	}
	term := containerStatus(p, "main").State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" || term.Message != "first-line\nlast-words" {
		t.Errorf("terminated state %+v, want exit 3, reason Error, message from the log", term)
	}
}

func TestGracefulDeletion(t *testing.T) {
	ctx := e2e(t)
	pod := shellPod("graceful",
		"trap 'echo got-sigterm; exit 0' TERM; echo ready; while true; do sleep 0.1; done",
		"trap '' TERM; echo ready; while true; do sleep 0.1; done")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To(int64(3))
	create(ctx, t, pod)
	waitLog(ctx, t, pod.Name, "c0", "ready")
	waitLog(ctx, t, pod.Name, "c1", "ready")
	running, err := client.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	netns := podNetns(running)
	if _, err := os.Stat(netns); err != nil {
		t.Fatalf("the pod's network namespace: %v", err)
	}
	start := time.Now()
	if err := client.CoreV1().Pods(namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("pod not deleted: %v", err)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("pod gone after %s, before the 3 s grace period that c1 (ignoring SIGTERM) should have used", took)
	}
	if got := logOf(pod.Name, "c0"); !strings.Contains(got, "got-sigterm") {
		t.Errorf("c0 did not get SIGTERM: %q", got)
	}
	if _, err := os.Stat(netns); !os.IsNotExist(err) {
		t.Errorf("the pod's network namespace %s survived the pod object: %v", netns, err)
	}
}

// podNetns is the path of a running pod's network namespace.
func podNetns(p *corev1.Pod) string {
	parts := strings.Split(p.Status.PodIP, ".")
	return "/run/netns/" + runner.net.bridge + "-" + parts[len(parts)-1]
}

func TestInPodClientReachesAPIServer(t *testing.T) {
	ctx := e2e(t)
	pod := shellPod("in-pod-client", `set -e
SA=/var/run/secrets/kubernetes.io/serviceaccount
curl -sf --cacert $SA/ca.crt -H "Authorization: Bearer $(cat $SA/token)" https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/version | grep -q gitVersion && echo curl=ok
kubectl auth whoami -o json`)
	create(ctx, t, pod)
	p := waitPod(ctx, t, pod.Name, "Succeeded", phase(corev1.PodSucceeded))
	got := logOf(pod.Name, "c0")
	for _, want := range []string{"curl=ok", `"username": "system:serviceaccount:default:default"`, `"in-pod-client"`, string(p.UID)} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s:\n%s", want, got)
		}
	}
}

func TestUnmappedImage(t *testing.T) {
	ctx := e2e(t)
	pod := shellPod("unmapped", "true")
	pod.Spec.Containers[0].Image = "registry.example/nothing:1.0"
	create(ctx, t, pod)
	p := waitPod(ctx, t, pod.Name, "ErrImagePull", func(p *corev1.Pod) bool {
		w := containerStatus(p, "c0").State.Waiting
		return w != nil && w.Reason == "ErrImagePull"
	})
	if w := containerStatus(p, "c0").State.Waiting; !strings.Contains(w.Message, "registry.example/nothing:1.0") || p.Status.Phase != corev1.PodPending {
		t.Errorf("waiting %+v in phase %s: want a message naming the image, phase Pending", w, p.Status.Phase)
	}
}

// logValues reads the key=value lines a container logged.
func logValues(pod, container string) map[string]string {
	values := map[string]string{}
	for _, line := range strings.Split(logOf(pod, container), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			values[k] = v
		}
	}
	return values
}
