package patches

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

const historyPolicy = "history: {s3: {endpoint: \"https://s3.example.com\", bucket: logs, secretName: history-s3}}\n"

func TestEventLogsShippedBySidecar(t *testing.T) {
	pod := driverPod()
	res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: mustPolicy(t, historyPolicy), Version: "test", AppID: "spark-test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
	conf, err := EffectiveConf(pod.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{keyEventLogEnabled: "true", keyEventLogDir: "file:///var/sparklet/event-logs",
		keyEventLogRolling: "true", keyEventLogRollingSize: "16m"} {
		if conf[k] != v {
			t.Errorf("conf %s = %q, want %q", k, conf[k], v)
		}
	}
	spark, sc := pod.Spec.Containers[0], sidecarOf(t, pod)
	if !hasMount(spark.VolumeMounts, VolumeEventLogs) || !hasMount(sc.VolumeMounts, VolumeEventLogs) {
		t.Errorf("the event-log emptyDir is not shared: spark %v, sidecar %v", spark.VolumeMounts, sc.VolumeMounts)
	}
	if !hasMount(sc.VolumeMounts, VolumeHistoryCred) {
		t.Errorf("the sidecar lacks the history credential: %v", sc.VolumeMounts)
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...) {
		if c.Name != SidecarName && hasMount(c.VolumeMounts, VolumeHistoryCred) {
			t.Errorf("container %q mounts the history credential; only the sidecar may", c.Name)
		}
	}
	var secret string
	for _, v := range pod.Spec.Volumes {
		if v.Name == VolumeHistoryCred && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if secret != "history-s3" {
		t.Errorf("history credential volume's Secret = %q, want history-s3", secret)
	}
	if env := ParseSidecarEnv(lookupIn(sc.Env)); env.EventLogDir != EventLogDir {
		t.Errorf("sidecar %s = %q, want %q", vocab.EnvEventLogDir, env.EventLogDir, EventLogDir)
	}
	once := pod.DeepCopy()
	if _, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: mustPolicy(t, historyPolicy), Version: "test", AppID: "spark-test"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(once, pod) {
		t.Errorf("second injection changed the pod")
	}
}

// With a claim as the store, the sidecar alone mounts it, writable; no
// Secret is mounted; the fsGroup sparklet sets does not have the kubelet
// walk the whole store at each start; a second injection changes nothing.
func TestEventLogsToClaim(t *testing.T) {
	pod := driverPod()
	pol := mustPolicy(t, "history: {pvc: {claimName: spark-history, prefix: events}}\n")
	in := Input{Namespace: "spark-jobs", Policy: pol, Version: "test", AppID: "spark-test"}
	res, err := Driver(pod, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
	sc := sidecarOf(t, pod)
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...) {
		for _, m := range c.VolumeMounts {
			switch {
			case m.Name == VolumeHistoryCred:
				t.Errorf("container %q mounts a history credential; a claim needs none", c.Name)
			case m.Name == VolumeHistoryStore && c.Name != SidecarName:
				t.Errorf("container %q mounts the history claim; only the sidecar may", c.Name)
			case m.Name == VolumeHistoryStore && (m.ReadOnly || m.MountPath != HistoryVolumeDir):
				t.Errorf("the sidecar mounts the claim %+v, want it writable at %s", m, HistoryVolumeDir)
			}
		}
	}
	if !hasMount(sc.VolumeMounts, VolumeHistoryStore) || !hasMount(pod.Spec.Containers[0].VolumeMounts, VolumeEventLogs) {
		t.Errorf("sidecar mounts %v, spark mounts %v: want the claim in the sidecar and the emptyDir in the JVM", sc.VolumeMounts, pod.Spec.Containers[0].VolumeMounts)
	}
	claim := ""
	for _, v := range pod.Spec.Volumes {
		if v.Name == VolumeHistoryStore && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if claim != "spark-history" {
		t.Errorf("history volume's claim = %q, want spark-history", claim)
	}
	if s := pod.Spec.SecurityContext; s == nil || s.FSGroup == nil || *s.FSGroup != sidecarUID || s.FSGroupChangePolicy == nil || *s.FSGroupChangePolicy != corev1.FSGroupChangeOnRootMismatch {
		t.Errorf("securityContext %+v, want fsGroup %d with OnRootMismatch", s, sidecarUID)
	}
	once := pod.DeepCopy()
	if res, err := Driver(pod, in); err != nil || len(res.Warnings) > 0 {
		t.Fatalf("second injection: %v, warnings %q", err, res.Warnings)
	}
	if !reflect.DeepEqual(once, pod) {
		t.Errorf("second injection changed the pod")
	}
}

// A pod's own event-log settings are kept, and the user is told what the
// sidecar then does.
func TestEventLogsUserSettingsKept(t *testing.T) {
	for name, tc := range map[string]struct {
		conf    string
		want    map[string]string
		ships   bool
		warning string
	}{
		"own dir": {conf: "spark.eventLog.dir s3a://mine/logs", want: map[string]string{keyEventLogDir: "s3a://mine/logs"},
			warning: `spark.eventLog.dir is "s3a://mine/logs", so the JVM writes its event log there and the sidecar ships no event log`},
		"disabled": {conf: "spark.eventLog.enabled false", want: map[string]string{keyEventLogEnabled: "false"},
			warning: `spark.eventLog.enabled is "false", so the JVM writes no event log`},
		"own size": {conf: "spark.eventLog.rolling.maxFileSize 2m", want: map[string]string{keyEventLogRollingSize: "2m", keyEventLogDir: eventLogURI}, ships: true},
		"no rolling": {conf: "spark.eventLog.rolling.enabled false", want: map[string]string{keyEventLogRolling: "false", keyEventLogDir: eventLogURI}, ships: true,
			warning: "ships only when the JVM ends"},
	} {
		t.Run(name, func(t *testing.T) {
			pod := driverPod(func(p *corev1.Pod) { p.Annotations = map[string]string{vocab.AnnotationSparkConf: tc.conf} })
			res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: mustPolicy(t, historyPolicy), Version: "test", AppID: "spark-test"})
			if err != nil {
				t.Fatal(err)
			}
			conf, err := EffectiveConf(pod.Annotations)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if conf[k] != v {
					t.Errorf("conf %s = %q, want %q", k, conf[k], v)
				}
			}
			if got := hasMount(sidecarOf(t, pod).VolumeMounts, VolumeEventLogs); got != tc.ships {
				t.Errorf("sidecar mounts the event logs: %v, want %v", got, tc.ships)
			}
			if tc.warning != "" && !strings.Contains(strings.Join(res.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q, want one with %q", res.Warnings, tc.warning)
			}
		})
	}
}

func sidecarOf(t *testing.T, pod *corev1.Pod) corev1.Container {
	t.Helper()
	for _, c := range pod.Spec.InitContainers {
		if c.Name == SidecarName {
			return c
		}
	}
	t.Fatal("no sidecar")
	return corev1.Container{}
}

// The pod gets an fsGroup so that the sidecar reads the JVM's 770 files,
// unless it has its own or mounts storage the kubelet would chown.
func TestEventLogsShareAGroup(t *testing.T) {
	own := int64(1000)
	for name, tc := range map[string]struct {
		mod     func(*corev1.Pod)
		want    *int64
		warning string
	}{
		"none": {mod: func(*corev1.Pod) {}, want: new(int64(65532))},
		"own":  {mod: func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &own} }, want: &own},
		"a PVC": {mod: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		}, warning: `mounts volume "data"`},
	} {
		t.Run(name, func(t *testing.T) {
			pod := driverPod(tc.mod)
			res, err := Driver(pod, Input{Namespace: "spark-jobs", Policy: mustPolicy(t, historyPolicy), Version: "test", AppID: "spark-test"})
			if err != nil {
				t.Fatal(err)
			}
			var got *int64
			if pod.Spec.SecurityContext != nil {
				got = pod.Spec.SecurityContext.FSGroup
			}
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("fsGroup = %v, want %v", got, tc.want)
			}
			if w := strings.Join(res.Warnings, "\n"); (tc.warning == "") != (w == "") || !strings.Contains(w, tc.warning) {
				t.Errorf("warnings %q, want one with %q", res.Warnings, tc.warning)
			}
		})
	}
}
