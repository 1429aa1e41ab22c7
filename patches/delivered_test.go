package patches

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/sparklet/sparklet/patches/sparkconf"
	"github.com/sparklet/sparklet/vocab"
)

// bigConf is a sparklet.io/spark-conf of about size bytes.
func bigConf(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "spark.executorEnv.FILLER_%05d %s\n", i, strings.Repeat("x", 90))
	}
	return b.String()
}

func annotationsSize(a map[string]string) int {
	n := 0
	for k, v := range a {
		n += len(k) + len(v)
	}
	return n
}

// TestLargeConfStoredOnce: a conf of 150 KiB, which the API server took
// before injection, is admitted: the effective conf holds only what the
// layers changed, so the annotations grow by less than 4 KiB, not by a
// second copy of the user's conf.
func TestLargeConfStoredOnce(t *testing.T) {
	pod := driverPod()
	pod.Annotations = map[string]string{vocab.AnnotationSparkConf: bigConf(150 << 10)}
	before := annotationsSize(pod.Annotations)
	if _, err := inject(t, pod, mustPolicy(t, testPolicy)); err != nil {
		t.Fatal(err)
	}
	after := annotationsSize(pod.Annotations)
	if grown := after - before; grown > 4<<10 {
		t.Errorf("annotations grew by %d bytes (%d to %d); the user's conf is stored twice", grown, before, after)
	}
	if strings.Contains(pod.Annotations[vocab.AnnotationEffectiveConf], "FILLER") {
		t.Errorf("%s repeats the user's properties", vocab.AnnotationEffectiveConf)
	}
}

// TestOversizedAnnotationsRefused: over the API server's total the pod is
// refused, with the annotations and their sizes named.
func TestOversizedAnnotationsRefused(t *testing.T) {
	pod := driverPod()
	pod.Annotations = map[string]string{vocab.AnnotationSparkConf: bigConf(apivalidation.TotalAnnotationSizeLimitB - 1000)}
	_, err := inject(t, pod, mustPolicy(t, testPolicy))
	var refused *Refused
	if !errors.As(err, &refused) || refused.Reason != "annotations-too-large" {
		t.Fatalf("err = %v, want an annotations-too-large refusal", err)
	}
	for _, want := range []string{"metadata.annotations: the injected pod's annotations would total ",
		"over the API server's limit of 262144 (TotalAnnotationSizeLimitB)",
		fmt.Sprintf("%s (%d bytes)", vocab.AnnotationSparkConf, len(vocab.AnnotationSparkConf)+len(pod.Annotations[vocab.AnnotationSparkConf])),
		vocab.AnnotationEffectiveConf + " ("} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not contain %q", err, want)
		}
	}
}

// TestDeliveredConfIsEffective: what the JVM reads, the pod's annotation
// followed by the effective conf, is the layered configuration: the
// command line's --conf wins over the annotation, the user's own values
// stay, and sparklet's keys are there.
func TestDeliveredConfIsEffective(t *testing.T) {
	pod := driverPod()
	user := "spark.app.name mine\nspark.executor.memory 2g\nspark.open.continuation a\\"
	pod.Annotations = map[string]string{vocab.AnnotationSparkConf: user}
	c := &pod.Spec.Containers[0]
	c.Args = append([]string{c.Args[0], "--conf", "spark.executor.memory=3g"}, c.Args[1:]...)
	if _, err := inject(t, pod, mustPolicy(t, testPolicy)); err != nil {
		t.Fatal(err)
	}
	conf, err := EffectiveConf(pod.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"spark.executor.memory":   "3g",
		"spark.app.name":          "mine",
		"spark.eventLog.enabled":  "true",
		"spark.open.continuation": "a",
		"spark.master":            "k8s://http://127.0.0.1:7443",
	} {
		if conf[k] != want {
			t.Errorf("%s = %q, want %q", k, conf[k], want)
		}
	}
	if strings.Contains(pod.Annotations[vocab.AnnotationEffectiveConf], "spark.app.name") {
		t.Errorf("%s repeats a value the user set:\n%s", vocab.AnnotationEffectiveConf, pod.Annotations[vocab.AnnotationEffectiveConf])
	}

	// The conf init container's script writes the same text.
	root := t.TempDir()
	dst, info := filepath.Join(root, "dst"), filepath.Join(root, "podinfo")
	for _, d := range []string{dst, info} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{ConfFile: pod.Annotations[vocab.AnnotationEffectiveConf], UserConfFile: user} {
		if err := os.WriteFile(filepath.Join(info, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", strings.NewReplacer(ConfDir, dst, PodInfoDir, info, ServingFile, servingFile(t, true)).Replace(confScript))
	cmd.Env = []string{"SPARK_HOME=" + filepath.Join(root, "nothing"), "PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	written, _ := os.ReadFile(filepath.Join(dst, ConfFile))
	if string(written) != DeliveredConf(pod.Annotations) {
		t.Errorf("the script wrote\n%s\nDeliveredConf is\n%s", written, DeliveredConf(pod.Annotations))
	}
	if again, err := sparkconf.Parse(string(written)); err != nil || !maps.Equal(again, conf) {
		t.Errorf("the written file reads as %v (%v), want %v", again, err, conf)
	}
}

// TestDeliveredDigest: the sidecar's digest covers the pod's own conf
// exactly when the pod projects it; a pod without one, or one injected
// before the conf was stored once, is checked on the effective conf alone,
// as before.
func TestDeliveredDigest(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	plain := driverPod()
	if _, err := inject(t, plain, pol); err != nil {
		t.Fatal(err)
	}
	if got, want := DeliveredDigest(plain), sparkconf.Digest(plain.Annotations[vocab.AnnotationEffectiveConf]); got != want {
		t.Errorf("without sparklet.io/spark-conf: digest %s, want the effective conf's %s", got, want)
	}
	withConf := driverPod()
	withConf.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.app.name mine\n"}
	if _, err := inject(t, withConf, pol); err != nil {
		t.Fatal(err)
	}
	admitted := DeliveredDigest(withConf)
	if admitted != sparkconf.Digest(DeliveredConf(withConf.Annotations)) {
		t.Errorf("with sparklet.io/spark-conf: the digest does not cover DeliveredConf")
	}
	sidecarEnv := ""
	for _, c := range withConf.Spec.InitContainers {
		for _, e := range c.Env {
			if e.Name == vocab.EnvConfSHA256 {
				sidecarEnv = e.Value
			}
		}
	}
	if sidecarEnv != admitted {
		t.Errorf("the sidecar's SPARKLET_CONF_SHA256 is %q, want %s", sidecarEnv, admitted)
	}
	withConf.Annotations[vocab.AnnotationSparkConf] += "spark.kubernetes.executor.podTemplateFile /tmp/x\n"
	if DeliveredDigest(withConf) == admitted {
		t.Errorf("an edit of sparklet.io/spark-conf leaves the digest as it was")
	}
}

// TestDeliveredConfClosesContinuations: whatever the pod's own conf ends
// with, its last value ends there and the effective conf after it is read
// as written (checked against Properties.load itself by
// TestRenderAgainstJava).
func TestDeliveredConfClosesContinuations(t *testing.T) {
	for _, user := range []string{"spark.a b\\", "spark.a b\\\r", "spark.a b\\\n", "spark.a \\\n  \\", "#x\\", "spark.a b\\\\\\"} {
		conf, err := sparkconf.Parse(deliveredConf(user, true, "spark.master local\n"))
		if err != nil || conf["spark.master"] != "local" {
			t.Errorf("after %q: spark.master = %q (%v), want the effective conf's", user, conf["spark.master"], err)
		}
		if strings.Contains(conf["spark.a"], "sparklet") {
			t.Errorf("after %q: spark.a = %q ran on into sparklet's lines", user, conf["spark.a"])
		}
	}
}
