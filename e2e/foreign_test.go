package e2e

import (
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/test/fixtures"
)

// TestSparkOperatorDriverIsLeftAlone creates a driver pod shaped as the
// Kubeflow spark-operator launches it, with kubectl: the webhook admits it
// unchanged and kubectl prints the webhook's warning.
func TestSparkOperatorDriverIsLeftAlone(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	const file = "../webhook/testdata/spark-operator-driver.pod.yaml"
	sent := fixtures.LoadPod(t, file)
	// The operator's own service account, which the pod names.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sent.Spec.ServiceAccountName}}
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := env.Kubectl(ctx, manifest, "create", "-n", ns, "-f", "-")
	if err != nil {
		t.Fatalf("kubectl create: %v\n%s%s", err, stdout, stderr)
	}
	const warning = "Warning: sparklet left this pod unchanged: the Kubeflow spark-operator launched it"
	if !strings.Contains(stderr, warning) {
		t.Errorf("kubectl printed no sparklet warning; stderr:\n%s", stderr)
	}
	stored, err := env.Client.CoreV1().Pods(ns).Get(ctx, sent.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireUntouched(t, stored)
	if !reflect.DeepEqual(stored.Labels, sent.Labels) || len(stored.Annotations) != len(sent.Annotations) {
		t.Errorf("metadata changed: labels %v, annotations %v", stored.Labels, stored.Annotations)
	}
	got, want := stored.Spec.Containers[0], sent.Spec.Containers[0]
	if !reflect.DeepEqual(got.Args, want.Args) || !reflect.DeepEqual(got.Env, want.Env) || !reflect.DeepEqual(got.Resources, want.Resources) {
		t.Errorf("the Spark container changed:\n got %+v\nwant %+v", got, want)
	}
	for _, v := range sent.Spec.Volumes {
		found := false
		for _, s := range stored.Spec.Volumes {
			found = found || s.Name == v.Name
		}
		if !found {
			t.Errorf("volume %s lost", v.Name)
		}
	}
}
