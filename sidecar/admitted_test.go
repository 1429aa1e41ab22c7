package sidecar

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sparklet/sparklet/internal/kubecore/kubecoretest"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

const (
	admittedScheduling = `{"scheduler":"kueue","queue":"lq"}`
	editedScheduling   = `{"scheduler":"kueue","queue":"someone-elses"}`
)

// admittedDriver is a Kueue driver as the webhook left it, with the
// digests it recorded in the sidecar's env in cfg.
func admittedDriver() (*corev1.Pod, func(*Config)) {
	d := driver()
	d.Annotations = map[string]string{
		vocab.AnnotationSparkConf:     "spark.executor.memory 2g\n",
		vocab.AnnotationEffectiveConf: "spark.eventLog.enabled true\n",
		vocab.AnnotationScheduling:    admittedScheduling,
	}
	d.Spec.Volumes = append(d.Spec.Volumes, corev1.Volume{Name: patches.VolumeConf, VolumeSource: corev1.VolumeSource{
		DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: patches.UserConfFile}}}}})
	conf, sched := patches.DeliveredDigest(d), patches.SchedulingDigest(d)
	return d, func(c *Config) { c.ConfSHA256, c.SchedulingSHA256 = conf, sched }
}

// TestEditedAnnotationsAreRefused: the JVM reads the pod's own
// sparklet.io/spark-conf and sparklet.io/effective-conf, and executors get
// the scheduling sparklet.io/scheduling records, so an edit of any of them
// between admission and the sidecar's start stops the sidecar with an
// Event naming the annotation.
func TestEditedAnnotationsAreRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		edit  func(map[string]string)
		names string
	}{
		"spark-conf":         {func(a map[string]string) { a[vocab.AnnotationSparkConf] += "spark.eventLog.enabled false\n" }, vocab.AnnotationSparkConf},
		"effective-conf":     {func(a map[string]string) { a[vocab.AnnotationEffectiveConf] += "spark.eventLog.enabled false\n" }, vocab.AnnotationEffectiveConf},
		"scheduling edited":  {func(a map[string]string) { a[vocab.AnnotationScheduling] = editedScheduling }, vocab.AnnotationScheduling},
		"scheduling removed": {func(a map[string]string) { delete(a, vocab.AnnotationScheduling) }, vocab.AnnotationScheduling},
	} {
		t.Run(name, func(t *testing.T) {
			d, admitted := admittedDriver()
			tc.edit(d.Annotations)
			events := runToRefusal(t, d, admitted)
			if len(events) != 1 || events[0].Reason != "ConfigurationTampered" || !strings.Contains(events[0].Message, tc.names) ||
				!strings.Contains(events[0].Message, "recreate the pod") {
				t.Errorf("events = %+v; want one ConfigurationTampered naming %s", events, tc.names)
			}
		})
	}
	t.Run("scheduling added", func(t *testing.T) {
		d := driver()
		sched := patches.SchedulingDigest(d)
		d.Annotations = map[string]string{vocab.AnnotationScheduling: editedScheduling}
		events := runToRefusal(t, d, func(c *Config) { c.SchedulingSHA256 = sched })
		if len(events) != 1 || !strings.Contains(events[0].Message, vocab.AnnotationScheduling) {
			t.Errorf("events = %+v; want one naming %s", events, vocab.AnnotationScheduling)
		}
	})
}

// runToRefusal runs a sidecar on driver d with the digests admitted sets,
// wants it to refuse to start, and returns the Events it wrote.
func runToRefusal(t *testing.T, d *corev1.Pod, admitted func(*Config)) []corev1.Event {
	t.Helper()
	client := fake.NewClientset(d)
	sc := newTestSidecar(t, "")
	admitted(&sc.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := sc.Run(ctx, kubecoretest.New(client))
	if err == nil || !strings.Contains(err.Error(), "changed after admission") {
		t.Fatalf("err = %v", err)
	}
	list, _ := client.CoreV1().Events(testNS).List(context.Background(), metav1.ListOptions{})
	return list.Items
}

// TestPodsWithoutSchedulingDigestStart: a pod injected before the webhook
// recorded the scheduling digest starts as before, whatever its
// sparklet.io/scheduling says.
func TestPodsWithoutSchedulingDigestStart(t *testing.T) {
	d, admitted := admittedDriver()
	d.Annotations[vocab.AnnotationScheduling] = editedScheduling
	sc := newTestSidecar(t, "")
	admitted(&sc.cfg)
	sc.cfg.SchedulingSHA256 = ""
	h := startSidecar(t, sc, d)
	code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(1))
	if code != 201 || !strings.Contains(string(body), `"kueue.x-k8s.io/queue-name":"someone-elses"`) {
		t.Errorf("create: %d %s", code, body)
	}
}

// TestLaterDriverEditsAreIgnored: once started, the sidecar stamps
// executors with the scheduling it checked, not with what a later version
// of its driver pod says, and says so once in a DriverAnnotationsChanged
// Event.
func TestLaterDriverEditsAreIgnored(t *testing.T) {
	d, admitted := admittedDriver()
	sc := newTestSidecar(t, "")
	admitted(&sc.cfg)
	h := startSidecar(t, sc, d)
	edited := d.DeepCopy()
	edited.Annotations[vocab.AnnotationScheduling] = editedScheduling
	if _, err := h.client.CoreV1().Pods(testNS).Update(context.Background(), edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The sidecar's cache has the edited pod once the JVM is served it.
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, body := h.do("GET", "/api/v1/namespaces/spark/pods/pi", "", nil)
		return strings.Contains(string(body), "someone-elses"), nil
	})
	if err != nil {
		t.Fatal("the sidecar's cache never saw the edited driver pod")
	}
	code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", executor(1))
	if code != 201 || !strings.Contains(string(body), `"kueue.x-k8s.io/queue-name":"lq"`) {
		t.Errorf("create after the edit: %d %s; want the admitted queue lq", code, body)
	}
	waitEvent(t, h.client, "DriverAnnotationsChanged", func(e corev1.Event) bool {
		return e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, vocab.AnnotationScheduling)
	})
}

// TestDriverAnnotationsChangedWarnsOnce: the first version of the driver
// pod whose admitted annotations differ from the checked pod's is warned
// of, no later one, and no other annotation (the sidecar writes
// sparklet.io/ui-url on its own pod).
func TestDriverAnnotationsChangedWarnsOnce(t *testing.T) {
	client := fake.NewClientset()
	s := newTestSidecar(t, "")
	s.events = testRecorder(client)
	checked, _ := admittedDriver()
	h := s.annotationsChangedHandler(checked)
	version := func(edit func(map[string]string)) *cachedPod {
		p := checked.DeepCopy()
		p.Annotations = maps.Clone(checked.Annotations)
		edit(p.Annotations)
		c, err := podTransform(true)(p)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*cachedPod)
	}
	same := version(func(map[string]string) {})
	uiURL := version(func(a map[string]string) { a[vocab.AnnotationUIURL] = "http://pi-ui.spark:4040" })
	h.OnAdd(same, true)
	h.OnUpdate(same, uiURL)
	s.events.flush(5 * time.Second)
	if events := eventsWithReason(t, client, "DriverAnnotationsChanged"); len(events) != 0 {
		t.Fatalf("warned of annotations that did not change: %+v", events)
	}
	conf := version(func(a map[string]string) { a[vocab.AnnotationEffectiveConf] += "spark.executor.instances 50\n" })
	sched := version(func(a map[string]string) { delete(a, vocab.AnnotationScheduling) })
	h.OnUpdate(uiURL, conf)
	h.OnUpdate(conf, sched)
	s.events.flush(5 * time.Second)
	events := eventsWithReason(t, client, "DriverAnnotationsChanged")
	if len(events) != 1 || events[0].Count != 1 || !strings.Contains(events[0].Message, vocab.AnnotationEffectiveConf) ||
		!strings.Contains(events[0].Message, "new pod") {
		t.Errorf("events = %+v; want one, once, naming %s", events, vocab.AnnotationEffectiveConf)
	}
}
