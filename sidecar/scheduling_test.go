package sidecar

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// gangDriver is a driver whose YuniKorn gang has executors of 1 CPU and
// 1408Mi, as the webhook records it.
func gangDriver(t *testing.T) *corev1.Pod {
	d := driver()
	d.Labels["yunikorn.apache.org/app-id"] = testApp
	rec, err := json.Marshal(patches.Scheduling{Scheduler: "yunikorn", Queue: "root.sparklet", Gang: patches.Gang{
		Executors: 2,
		Executor:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1408Mi")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	d.Annotations = map[string]string{vocab.AnnotationScheduling: string(rec)}
	return d
}

func sized(id int, cpu, mem string) *corev1.Pod {
	p := executor(id)
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
	}
	return p
}

// TestExecutorsJoinTheGang: the sidecar stamps every executor with what
// YuniKorn needs to put it in the driver's gang, and warns once, with an
// Event, when executors are larger than the gang holds room for, and the
// JVM with a Warning header on each such executor's answer.
func TestExecutorsJoinTheGang(t *testing.T) {
	h := startWith(t, "", gangDriver(t))
	code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", sized(1, "1", "1408Mi"))
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var created corev1.Pod
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	if created.Spec.SchedulerName != "yunikorn" || created.Labels["yunikorn.apache.org/app-id"] != testApp ||
		created.Labels["yunikorn.apache.org/queue"] != "" || created.Annotations["yunikorn.apache.org/task-group-name"] != "spark-executor" {
		t.Errorf("executor not stamped for the gang: scheduler %q, labels %v, annotations %v", created.Spec.SchedulerName, created.Labels, created.Annotations)
	}
	h.sc.events.flush(5 * time.Second)
	if n := len(eventsWithReason(t, h.client, "ExecutorLargerThanGang")); n != 0 {
		t.Errorf("%d ExecutorLargerThanGang events for an executor of the gang's size", n)
	}
	if w := h.header.Values("Warning"); len(w) != 0 {
		t.Errorf("Warning headers %q for an executor of the gang's size", w)
	}
	var warned []string
	for id := 2; id <= 3; id++ {
		if code, body := h.do("POST", "/api/v1/namespaces/spark/pods", "application/json", sized(id, "2", "1408Mi")); code != 201 {
			t.Fatalf("create: %d %s", code, body)
		}
		warnings, errs := utilnet.ParseWarningHeaders(h.header.Values("Warning"))
		if len(errs) != 0 || len(warnings) != 1 || warnings[0].Code != 299 {
			t.Fatalf("Warning headers %q: %v; want one with code 299", h.header.Values("Warning"), errs)
		}
		warned = append(warned, warnings[0].Text)
	}
	h.sc.events.flush(5 * time.Second)
	events := eventsWithReason(t, h.client, "ExecutorLargerThanGang")
	if len(events) != 1 || events[0].Type != corev1.EventTypeWarning || !strings.Contains(events[0].Message, "cpu 2 > 1") || events[0].Count != 2 {
		t.Fatalf("ExecutorLargerThanGang events: %+v; want one Warning naming cpu 2 > 1, counted twice", events)
	}
	for _, text := range warned {
		if text != events[0].Message {
			t.Errorf("the JVM was warned %q, the Event says %q", text, events[0].Message)
		}
	}
}
