package sidecar

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sparklet/sparklet/internal/kubecore/kubecoretest"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

func uiDriver(annotations map[string]string) *corev1.Pod {
	a := map[string]string{vocab.AnnotationEffectiveConf: "spark.app.id spark-1\n"}
	for k, v := range annotations {
		a[k] = v
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "ns", UID: "uid-1", Annotations: a,
		Labels: map[string]string{vocab.LabelRole: "driver", vocab.LabelAppID: "spark-1"}}}
}

// TestExposeUI: asked for by the policy or the annotation (which wins),
// the sidecar creates a Service owned by the driver pod that selects only
// it, records the URL on the pod and says so in an Event.
func TestExposeUI(t *testing.T) {
	for _, tc := range []struct {
		name        string
		policy      bool
		annotations map[string]string
		port        int32 // 0: no Service
	}{
		{"not asked", false, nil, 0},
		{"policy", true, nil, 4040},
		{"annotation", false, map[string]string{vocab.AnnotationUI: "true"}, 4040},
		{"declined", true, map[string]string{vocab.AnnotationUI: "false"}, 0},
		{"own port", true, map[string]string{vocab.AnnotationEffectiveConf: "spark.ui.port 4999\n"}, 4999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			driver := uiDriver(tc.annotations)
			client := fake.NewClientset(driver)
			events := newRecorder(kubecoretest.New(client), driver, logrus.NewEntry(logrus.New()))
			exposeUI(context.Background(), kubecoretest.New(client), patches.ReadDriver(driver), &policy.Effective{UIService: tc.policy}, "spark-1", events)
			events.flush(10 * time.Second) // Events are written by the recorder's own goroutine

			svcs, _ := client.CoreV1().Services("ns").List(context.Background(), metav1.ListOptions{})
			pod, _ := client.CoreV1().Pods("ns").Get(context.Background(), "pi", metav1.GetOptions{})
			evs, _ := client.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
			if tc.port == 0 {
				if len(svcs.Items) != 0 || pod.Annotations[vocab.AnnotationUIURL] != "" || len(evs.Items) != 0 {
					t.Errorf("not asked for, yet: services %v, annotation %q, events %v", svcs.Items, pod.Annotations[vocab.AnnotationUIURL], evs.Items)
				}
				return
			}
			if len(svcs.Items) != 1 {
				t.Fatalf("%d Services", len(svcs.Items))
			}
			svc := svcs.Items[0]
			own := svc.OwnerReferences
			if svc.Name != "pi-ui" || len(own) != 1 || own[0].UID != driver.UID || own[0].Kind != "Pod" || own[0].Name != "pi" {
				t.Errorf("Service %s owned by %+v, want pi-ui owned by the driver pod", svc.Name, own)
			}
			if svc.Spec.Selector[vocab.LabelRole] != "driver" || svc.Spec.Selector[vocab.LabelAppID] != "spark-1" || len(svc.Spec.Selector) != 2 {
				t.Errorf("selector %v", svc.Spec.Selector)
			}
			if p := svc.Spec.Ports[0]; p.Port != tc.port || p.TargetPort.IntVal != tc.port || p.Name != patches.UIPortName {
				t.Errorf("port %+v, want %d", p, tc.port)
			}
			url := "http://pi-ui.ns.svc:" + map[int32]string{4040: "4040", 4999: "4999"}[tc.port]
			if got := pod.Annotations[vocab.AnnotationUIURL]; got != url {
				t.Errorf("%s = %q, want %q", vocab.AnnotationUIURL, got, url)
			}
			if len(evs.Items) != 1 || evs.Items[0].Reason != "SparkUI" || !strings.Contains(evs.Items[0].Message, url) {
				t.Errorf("events %+v, want one SparkUI event with the URL", evs.Items)
			}
			// Run again (a restarted sidecar): the Service exists, no error.
			exposeUI(context.Background(), kubecoretest.New(client), patches.ReadDriver(driver), &policy.Effective{UIService: tc.policy}, "spark-1", events)
			events.flush(10 * time.Second) // Events are written by the recorder's own goroutine
			evs, _ = client.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
			for _, e := range evs.Items {
				if e.Type == corev1.EventTypeWarning {
					t.Errorf("second run: %s %s", e.Reason, e.Message)
				}
			}
		})
	}
}

func TestUIServiceName(t *testing.T) {
	long := strings.Repeat("a", 70)
	if got := uiServiceName(long); len(got) > 63 || !strings.HasSuffix(got, "-ui") {
		t.Errorf("uiServiceName(70 chars) = %q (%d)", got, len(got))
	}
	if got := uiServiceName("pi"); got != "pi-ui" {
		t.Errorf("uiServiceName(pi) = %q", got)
	}
}

// TestExposeUIIngress: with the policy's template, an Ingress owned by
// the pod routes the host to the UI Service, and the URL is the Ingress's.
func TestExposeUIIngress(t *testing.T) {
	driver := uiDriver(map[string]string{vocab.AnnotationUI: "true"})
	client := fake.NewClientset(driver)
	events := newRecorder(kubecoretest.New(client), driver, logrus.NewEntry(logrus.New()))
	pol := &policy.Effective{UIIngress: &policy.UIIngress{Host: "{{name}}-{{app}}.{{namespace}}.spark.example.com", IngressClassName: "nginx",
		TLSSecretName: "ui-tls", Annotations: map[string]string{"nginx.ingress.kubernetes.io/ssl-redirect": "true"}}}
	exposeUI(context.Background(), kubecoretest.New(client), patches.ReadDriver(driver), pol, "spark-1", events)

	ing, err := client.NetworkingV1().Ingresses("ns").Get(context.Background(), "pi-ui", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	host := "pi-spark-1.ns.spark.example.com"
	rule := ing.Spec.Rules[0]
	backend := rule.HTTP.Paths[0].Backend.Service
	if rule.Host != host || backend.Name != "pi-ui" || backend.Port.Name != patches.UIPortName {
		t.Errorf("rule %+v to %+v, want %s to Service pi-ui port %s", rule.Host, backend, host, patches.UIPortName)
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" || ing.Spec.TLS[0].SecretName != "ui-tls" ||
		ing.Annotations["nginx.ingress.kubernetes.io/ssl-redirect"] != "true" {
		t.Errorf("ingress spec %+v, annotations %v", ing.Spec, ing.Annotations)
	}
	if own := ing.OwnerReferences; len(own) != 1 || own[0].UID != driver.UID {
		t.Errorf("Ingress owners %+v", own)
	}
	pod, _ := client.CoreV1().Pods("ns").Get(context.Background(), "pi", metav1.GetOptions{})
	if got := pod.Annotations[vocab.AnnotationUIURL]; got != "https://"+host+"/" {
		t.Errorf("%s = %q, want the Ingress's https URL", vocab.AnnotationUIURL, got)
	}
}
