package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/e2egate"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/vocab"
)

// installTokenPolicy renders the chart's driver-token policies for the
// sidecar image the webhook injects, creates them, and removes them when
// the test ends.
func installTokenPolicy(ctx context.Context, t *testing.T, sidecarImage string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(e2egate.BinDir(t, "with helm in it"), "helm"), "template", "demo", "../charts/sparklet",
		"--namespace", testenv.WebhookNamespace, "--kube-version", "1.37.2", "--set", "policy.sidecar.image="+sidecarImage,
		"--show-only", "templates/driver-token-policy.yaml")
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, errb.String())
	}
	api := env.Client.AdmissionregistrationV1()
	for _, doc := range strings.Split(out.String(), "\n---") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			var p admissionv1.ValidatingAdmissionPolicy
			if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
				t.Fatal(err)
			}
			if _, err := api.ValidatingAdmissionPolicies().Create(ctx, &p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", p.Name, err)
			}
			t.Cleanup(func() {
				_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), p.Name, metav1.DeleteOptions{})
			})
		case "ValidatingAdmissionPolicyBinding":
			var b admissionv1.ValidatingAdmissionPolicyBinding
			if err := yaml.UnmarshalStrict([]byte(doc), &b); err != nil {
				t.Fatal(err)
			}
			if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &b, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", b.Name, err)
			}
			t.Cleanup(func() {
				_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
			})
		}
	}
}

// borrower is a pod the webhook never sees (no spark-role label) that runs
// as the driver service account with the token automounted.
func borrower() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "borrower-"},
		Spec: corev1.PodSpec{ServiceAccountName: testenv.DriverServiceAccount,
			Containers: []corev1.Container{{Name: "shell", Image: "busybox", Command: []string{"sleep", "3600"}}}},
	}
}

func TestDriverTokenPolicy(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, true)
	pods := env.Client.CoreV1().Pods(ns)

	// The sidecar image the webhook injects, from a server-side dry run.
	dry, err := pods.Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	image := ""
	for _, c := range dry.Spec.InitContainers {
		if c.Name == patches.SidecarName {
			image = c.Image
		}
	}
	if image == "" {
		t.Fatalf("the dry run was not injected: %+v", dry.Spec.InitContainers)
	}
	installTokenPolicy(ctx, t, image)

	// The API server applies a new policy once its informer has it.
	const refusal = "only Spark driver pods that sparklet injected may use it"
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Create(ctx, borrower(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), refusal), nil
	})
	if err != nil {
		t.Fatalf("the policy never refused a pod borrowing the driver account: %v", err)
	}

	t.Run("not injected is refused", func(t *testing.T) {
		_, err := pods.Create(ctx, borrower(), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), refusal) {
			t.Fatalf("err = %v, want a refusal saying %q", err, refusal)
		}
	})
	t.Run("opted out is refused", func(t *testing.T) {
		p := examplePod(t, "spark-pi-pod.yaml")
		p.Annotations = map[string]string{vocab.AnnotationInject: "false"}
		p.Spec.ServiceAccountName = testenv.DriverServiceAccount
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), refusal) {
			t.Fatalf("err = %v, want a refusal saying %q", err, refusal)
		}
	})
	t.Run("forged marks are refused", func(t *testing.T) {
		// sparklet's status and sidecar written by hand on a pod the webhook
		// never sees: a sidecar of the user's own image that mounts the token.
		p := borrower()
		p.Annotations = map[string]string{vocab.AnnotationStatus: "{}"}
		off, always := false, corev1.ContainerRestartPolicyAlways
		p.Spec.AutomountServiceAccountToken = &off
		p.Spec.InitContainers = []corev1.Container{{Name: patches.SidecarName, Image: "busybox", Args: []string{"sidecar"}, RestartPolicy: &always,
			VolumeMounts: []corev1.VolumeMount{{Name: "tok", MountPath: patches.ServiceAccount}}}}
		p.Spec.Volumes = []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), refusal) {
			t.Fatalf("err = %v, want a refusal saying %q", err, refusal)
		}
	})
	t.Run("token Secret is refused", func(t *testing.T) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spark-driver-token",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: testenv.DriverServiceAccount}},
			Type: corev1.SecretTypeServiceAccountToken}
		_, err := env.Client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "long-lived token Secret for the sparklet driver ServiceAccount spark-driver") {
			t.Fatalf("err = %v, want the token Secret refused", err)
		}
	})
	t.Run("another account is admitted", func(t *testing.T) {
		p := borrower()
		p.Spec.ServiceAccountName = "default"
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("a pod of another account was refused: %v", err)
		}
	})

	t.Run("a mesh proxy's own token is admitted", func(t *testing.T) {
		// Istio's istio-proxy with istio-token, a projection for audience
		// istio-ca (manifests/charts/istio-control/istio-discovery/files/
		// injection-template.yaml): not a credential for the API server.
		p := examplePod(t, "spark-pi-pod.yaml")
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "istio-proxy", Image: "busybox", Args: []string{"proxy", "sidecar"},
			RestartPolicy: &always, VolumeMounts: []corev1.VolumeMount{{Name: "istio-token", MountPath: "/var/run/secrets/tokens"}}})
		expiry := int64(43200)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "istio-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "istio-ca", ExpirationSeconds: &expiry, Path: "istio-token"}}}}}})
		created, err := pods.Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("a driver with Istio's token was refused: %v", err)
		}
		requireInjected(t, created)
	})

	var injected *corev1.Pod
	t.Run("injected is admitted", func(t *testing.T) {
		created, err := pods.Create(ctx, examplePod(t, "spark-pi-pod.yaml"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("the injected driver was refused: %v", err)
		}
		if created.Spec.ServiceAccountName != testenv.DriverServiceAccount {
			t.Fatalf("the driver runs as %q, not the driver account", created.Spec.ServiceAccountName)
		}
		requireInjected(t, created)
		injected = created
	})
	for _, tc := range []struct {
		name, want, target string
		debug              corev1.EphemeralContainerCommon
	}{
		{"ephemeral container with the token is refused", "debugger can read the token", "",
			corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: patches.VolumeToken, MountPath: "/token"}}}},
		{"ephemeral container in the sidecar's processes is refused", "process namespace shared with the sparklet sidecar", patches.SidecarName,
			corev1.EphemeralContainerCommon{Name: "peeker", Image: "busybox"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if injected == nil {
				t.Skip("no injected pod")
			}
			// Retried while kwok and the scheduler update the pod.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p, err := pods.Get(ctx, injected.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: tc.debug, TargetContainerName: tc.target})
				_, err = pods.UpdateEphemeralContainers(ctx, p.Name, p, metav1.UpdateOptions{})
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}
