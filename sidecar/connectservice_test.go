package sidecar

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sparklet/sparklet/internal/kubecore/kubecoretest"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

func connectServerPod(name string, uid types.UID, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid, Annotations: annotations,
		Labels: map[string]string{vocab.LabelRole: "driver", vocab.LabelConnectServer: "spark-connect"}}}
}

// TestExposeConnect: asked for by the policy or the annotation (which
// wins), the first pod's sidecar creates the Service selecting every pod
// of the server, the second pod's joins its owners, and each pod gets the
// address and an Event.
func TestExposeConnect(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name        string
		policy      *bool
		annotations map[string]string
		want        bool
	}{
		{"not asked", nil, nil, false},
		{"policy", &yes, nil, true},
		{"annotation", nil, map[string]string{vocab.AnnotationConnectService: "true"}, true},
		{"declined", &yes, map[string]string{vocab.AnnotationConnectService: "false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, second := connectServerPod("spark-connect-a", "uid-a", tc.annotations), connectServerPod("spark-connect-b", "uid-b", tc.annotations)
			client := fake.NewClientset(first, second)
			pol := &policy.Effective{Connect: policy.Connect{Service: tc.policy}}
			for _, pod := range []*corev1.Pod{first, second} {
				events := newRecorder(kubecoretest.New(client), pod, logrus.NewEntry(logrus.New()))
				exposeConnect(context.Background(), kubecoretest.New(client), pod, pol, true, events)
				events.flush(10 * time.Second)
			}
			svcs, _ := client.CoreV1().Services("ns").List(context.Background(), metav1.ListOptions{})
			if !tc.want {
				if len(svcs.Items) != 0 {
					t.Errorf("not asked for, yet services %v", svcs.Items)
				}
				return
			}
			if len(svcs.Items) != 1 {
				t.Fatalf("services %v, want one", svcs.Items)
			}
			svc := svcs.Items[0]
			if svc.Name != "spark-connect-connect" || svc.Spec.Selector[vocab.LabelConnectServer] != "spark-connect" || svc.Spec.Selector[vocab.LabelRole] != "driver" {
				t.Errorf("service %s selects %v, want spark-connect-connect selecting the server's drivers", svc.Name, svc.Spec.Selector)
			}
			if p := svc.Spec.Ports[0]; p.Port != 15002 || p.AppProtocol == nil || *p.AppProtocol != "kubernetes.io/h2c" {
				t.Errorf("port %+v, want 15002 with appProtocol kubernetes.io/h2c", p)
			}
			var owners []string
			for _, o := range svc.OwnerReferences {
				if o.Controller != nil && *o.Controller {
					t.Errorf("owner %s is the controller; no pod may be", o.Name)
				}
				owners = append(owners, string(o.UID))
			}
			slices.Sort(owners)
			if strings.Join(owners, ",") != "uid-a,uid-b" {
				t.Errorf("owners %v, want both pods", owners)
			}
			for _, name := range []string{first.Name, second.Name} {
				pod, _ := client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
				if got := pod.Annotations[vocab.AnnotationConnectURL]; got != "sc://spark-connect-connect.ns.svc:15002" {
					t.Errorf("pod %s: %s = %q", name, vocab.AnnotationConnectURL, got)
				}
			}
			evs, _ := client.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
			if len(evs.Items) != 2 || evs.Items[0].Reason != "SparkConnectService" {
				t.Errorf("events %v, want a SparkConnectService Event on each pod", evs.Items)
			}
		})
	}
}

// A pod without the server label, as an older sparklet injected it, gets
// a Warning Event and no Service.
func TestExposeConnectWithoutLabel(t *testing.T) {
	pod := connectServerPod("old", "uid-o", map[string]string{vocab.AnnotationConnectService: "true"})
	delete(pod.Labels, vocab.LabelConnectServer)
	client := fake.NewClientset(pod)
	events := newRecorder(kubecoretest.New(client), pod, logrus.NewEntry(logrus.New()))
	exposeConnect(context.Background(), kubecoretest.New(client), pod, &policy.Effective{}, true, events)
	events.flush(10 * time.Second)
	svcs, _ := client.CoreV1().Services("ns").List(context.Background(), metav1.ListOptions{})
	evs, _ := client.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if len(svcs.Items) != 0 || len(evs.Items) != 1 || evs.Items[0].Reason != "SparkConnectServiceFailed" || !strings.Contains(evs.Items[0].Message, vocab.LabelConnectServer) {
		t.Errorf("services %v, events %v; want none and one warning naming the label", svcs.Items, evs.Items)
	}
}

// With TLS on the port, the Service declares no appProtocol: proxies
// would speak cleartext HTTP/2 to it.
func TestConnectServiceTLS(t *testing.T) {
	svc, err := ConnectService(connectServerPod("a", "uid-a", nil), false)
	if err != nil {
		t.Fatal(err)
	}
	if p := svc.Spec.Ports[0]; p.AppProtocol != nil {
		t.Errorf("port %+v declares appProtocol %q over TLS", p, *p.AppProtocol)
	}
}
