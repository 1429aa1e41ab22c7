package podrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// TestInjectedDriverPod runs a driver pod as the webhook patches it, with
// the real sparklet sidecar (SPARKLET_BIN_DIR/sparklet) as its native
// sidecar and a shell in place of the JVM (see testImages): the downward API conf, the
// projected token (the sidecar's in-cluster client), the JVM's emptyDir,
// GOMEMLIMIT from resourceFieldRef and the startup probe must all work for
// the shell to find the sidecar serving on 127.0.0.1 when it starts, and
// the pod completes when the shell exits.
func TestInjectedDriverPod(t *testing.T) {
	ctx := e2e(t)
	if _, err := os.Stat(filepath.Join(os.Getenv("SPARKLET_BIN_DIR"), "sparklet")); err != nil {
		t.Fatalf("the sidecar binary: %v (make build)", err)
	}
	sidecarRBAC(t)
	pol := policy.Default(version.Version).For(namespace)
	script := fmt.Sprintf(`set -e
echo "master=$(grep '^spark.master' $SPARK_CONF_DIR/spark-defaults.conf)"
echo "driver-ip=$SPARKLET_POD_IP"
echo "jvm-token=$(test -s %s && echo present)"
echo "api=$(curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/api/v1/namespaces/%s/pods)"`,
		patches.TokenFile, pol.Sidecar.Port, namespace)
	pod := shellPod("driver", script)
	pod.Labels = map[string]string{vocab.LabelRole: "driver"}
	pod.Spec.Containers[0].Name = "spark"
	pod.Spec.Containers[0].Image = "apache/spark:3.5.1" // a shell, see testImages
	if res, err := patches.Driver(pod, patches.Input{Namespace: namespace, Policy: pol, Version: "test"}); err != nil || res.Skipped != nil {
		t.Fatalf("patch: %+v, %v", res.Skipped, err)
	}
	create(ctx, t, pod)
	p := waitPod(ctx, t, pod.Name, "Succeeded", phase(corev1.PodSucceeded))
	out := logValues(pod.Name, "spark")
	if !strings.Contains(out["master"], fmt.Sprintf("127.0.0.1:%d", pol.Sidecar.Port)) || out["driver-ip"] != p.Status.PodIP ||
		out["jvm-token"] != "present" || out["api"] != "401" {
		t.Errorf("the driver container saw %v; want spark.master on the sidecar, its pod IP, the JVM token, and the sidecar answering 401 without it\n%s", out, describe(p))
	}
	if s := containerStatus(p, patches.SidecarName); s.State.Terminated == nil || s.RestartCount != 0 {
		t.Errorf("sidecar %+v: want stopped after the driver, never restarted\n%s", s, logOf(pod.Name, patches.SidecarName))
	}
}

// sidecarRBAC creates the built-in policy's driver service account, as
// the chart does, and lets it do what the chart's driver role grants the
// sidecar.
func sidecarRBAC(t *testing.T) {
	ctx := e2e(t)
	_, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: policy.DefaultDriverServiceAccount}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	all := []string{"get", "list", "watch", "create", "delete", "deletecollection", "patch"}
	_, err = client.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "sparklet-driver"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps", "persistentvolumeclaims"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "create", "patch", "delete", "deletecollection"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, err = client.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sparklet-driver"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "sparklet-driver"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: policy.DefaultDriverServiceAccount, Namespace: namespace}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}
