package charts

import (
	"context"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/test/cluster"
)

// TestHistoryServerOffByDefault: nothing of the history server without
// history.server.enabled.
func TestHistoryServerOffByDefault(t *testing.T) {
	for key := range render(t, "custom-policy.yaml").docs {
		if strings.Contains(key, "-history") {
			t.Errorf("%s rendered with the history server off", key)
		}
	}
}

// TestHistoryServerRenders: Spark's HistoryServer from the Spark image
// reads the mirror that history-sync, from sparklet's image, keeps of the
// policy's store; the store's Secret is mounted in the sync container
// alone; the Service selects the pod and the webhook's does not.
func TestHistoryServerRenders(t *testing.T) {
	r, d := historyDeployment(t, "history-server.yaml")
	name := d.Name
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 2 || spec.Containers[0].Name != "history-server" || spec.Containers[1].Name != "history-sync" {
		t.Fatalf("containers %v, want history-server and history-sync", spec.Containers)
	}
	server, sync := spec.Containers[0], spec.Containers[1]
	if server.Image != "apache/spark:4.3.0" || !slices.Contains(server.Command, "org.apache.spark.deploy.history.HistoryServer") {
		t.Errorf("history-server runs %s %v, want Spark's HistoryServer from the Spark image", server.Image, server.Command)
	}
	if sync.Image != "ghcr.io/sparklet/sparklet:0.1.0" {
		t.Errorf("history-sync image %s, want sparklet's", sync.Image)
	}
	wantArgs := []string{"history-sync", "--endpoint=https://s3.eu-west-1.amazonaws.com", "--bucket=spark-history", "--prefix=events/prod",
		"--region=eu-west-1", "--dir=/var/sparklet/history", "--interval=5s", "--credential-dir=/var/run/secrets/sparklet-history"}
	if !reflect.DeepEqual(sync.Args, wantArgs) {
		t.Errorf("history-sync args %q, want %q (the policy's store)", sync.Args, wantArgs)
	}
	var secretVolume string
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			secretVolume = v.Name
			if v.Secret.SecretName != "history-read" {
				t.Errorf("the store's Secret is %s, want history.server.s3.secretName over the policy's", v.Secret.SecretName)
			}
		}
	}
	mounts := func(c corev1.Container, volume string) (mounted, readOnly bool) {
		for _, m := range c.VolumeMounts {
			if m.Name == volume {
				return true, m.ReadOnly
			}
		}
		return false, false
	}
	if m, _ := mounts(sync, secretVolume); !m || secretVolume == "" {
		t.Errorf("history-sync does not mount the store's Secret (volume %q)", secretVolume)
	}
	if m, _ := mounts(server, secretVolume); m {
		t.Error("the HistoryServer mounts the store's Secret")
	}
	for _, c := range spec.Containers {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "AWS_") || e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				t.Errorf("%s has the credential in its env: %s", c.Name, e.Name)
			}
		}
	}
	if m, ro := mounts(server, "mirror"); !m || !ro {
		t.Errorf("the HistoryServer mounts the mirror: %v, read-only: %v; want read-only", m, ro)
	}
	if m, ro := mounts(sync, "mirror"); !m || ro {
		t.Errorf("history-sync mounts the mirror: %v, read-only: %v; want writable", m, ro)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the history server's pod mounts a Kubernetes token; it needs none")
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation ||
			!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s securityContext = %+v, want Pod Security restricted's", c.Name, sc)
		}
	}

	var conf corev1.ConfigMap
	r.get(t, "ConfigMap/"+releaseNS+"/"+name, &conf)
	for _, want := range []string{"spark.history.fs.logDirectory=file:/var/sparklet/history\n", "spark.history.ui.port=18080", "spark.history.fs.cleaner.enabled=false\n"} {
		if !strings.Contains(conf.Data["spark-history.conf"], want) {
			t.Errorf("spark-history.conf lacks %q:\n%s", want, conf.Data["spark-history.conf"])
		}
	}
	var svc, webhook corev1.Service
	r.get(t, "Service/"+releaseNS+"/"+name, &svc)
	r.get(t, "Service/"+releaseNS+"/"+release+"-sparklet", &webhook)
	if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Template.Labels) || svc.Spec.Ports[0].Port != 18080 || svc.Spec.Ports[0].TargetPort.StrVal != "http" {
		t.Errorf("history Service %+v does not serve the pod's port 18080", svc.Spec)
	}
	if selects(webhook.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("the webhook's Service %v selects the history server's pod", webhook.Spec.Selector)
	}
}

// TestHistoryServerReadsClaim: with a claim, the HistoryServer mounts it
// read-only and reads it under the policy's prefix, waiting for the
// directory the first driver makes; nothing syncs, no Secret is mounted,
// and no fsGroup has the kubelet change the drivers' files.
func TestHistoryServerReadsClaim(t *testing.T) {
	r, d := historyDeployment(t, "history-server-pvc.yaml")
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 || spec.Containers[0].Name != "history-server" {
		t.Fatalf("containers %v, want the HistoryServer alone", spec.Containers)
	}
	server := spec.Containers[0]
	if len(spec.Volumes) != 3 || spec.Volumes[0].PersistentVolumeClaim == nil ||
		spec.Volumes[0].PersistentVolumeClaim.ClaimName != "history-read" || !spec.Volumes[0].PersistentVolumeClaim.ReadOnly {
		t.Errorf("volumes %+v, want the claim history-read read-only, the tmp dir and the conf", spec.Volumes)
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil || v.EmptyDir != nil && v.Name == "mirror" {
			t.Errorf("volume %s: a claim needs no Secret and no mirror", v.Name)
		}
	}
	if i := slices.IndexFunc(server.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == spec.Volumes[0].Name }); i < 0 ||
		!server.VolumeMounts[i].ReadOnly || server.VolumeMounts[i].MountPath != "/var/sparklet/history" {
		t.Errorf("mounts %+v, want the claim read-only at /var/sparklet/history", server.VolumeMounts)
	}
	if spec.SecurityContext.FSGroup != nil {
		t.Errorf("fsGroup %d: the kubelet would change the ownership of the drivers' store", *spec.SecurityContext.FSGroup)
	}
	const logDir = "/var/sparklet/history/events/prod"
	if !slices.Contains(server.Command, logDir) || !slices.Contains(server.Command, "org.apache.spark.deploy.history.HistoryServer") || server.StartupProbe == nil {
		t.Errorf("command %q, startup probe %v: want the HistoryServer started once %s exists, with a startup probe while it waits", server.Command, server.StartupProbe, logDir)
	}
	var conf corev1.ConfigMap
	r.get(t, "ConfigMap/"+releaseNS+"/"+d.Name, &conf)
	if want := "spark.history.fs.logDirectory=file:" + logDir + "\n"; !strings.Contains(conf.Data["spark-history.conf"], want) {
		t.Errorf("spark-history.conf lacks %q:\n%s", want, conf.Data["spark-history.conf"])
	}
}

// historyDeployment renders the chart with the values file and returns
// the history server's Deployment.
func historyDeployment(t *testing.T, values string) (rendered, appsv1.Deployment) {
	t.Helper()
	r := render(t, values)
	var d appsv1.Deployment
	r.get(t, "Deployment/"+releaseNS+"/"+release+"-sparklet-history", &d)
	return r, d
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestBadHistoryServerValuesAreRefused: an enabled server without a store,
// the chart's own properties in sparkConf and mistyped values fail with
// the value's name.
func TestBadHistoryServerValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"history.server.enabled=true"}, "history.server.enabled is true but the history store has no endpoint: set history.server.s3.endpoint, or policy.history.s3.endpoint"},
		{[]string{"history.server.enabled=true", "history.server.s3.endpoint=https://s3.example.com", "history.server.s3.bucket=b"}, "has no secretName"},
		{[]string{"history.server.enabled=true", "history.server.s3.endpoint=https://s3.example.com", "history.server.s3.bucket=b", "history.server.s3.secretName=s",
			"history.server.sparkConf.spark\\.history\\.ui\\.port=x"}, "history.server.sparkConf sets spark.history.ui.port, which is the chart's"},
		{[]string{"history.server.s3.endpoint=s3.example.com"}, "/history/server/s3/endpoint"},
		{[]string{"history.server.syncInterval=soon"}, "/history/server/syncInterval"},
		{[]string{"history.server.imagePullPolicy=Sometimes"}, "/history/server/imagePullPolicy"},
		{[]string{"history.server.replicas=2"}, "replicas"},
		{[]string{"history.server.enabled=true", "policy.history.pvc.claimName=spark-history"},
			"history.server.enabled is true and policy.history.pvc names a claim, but history.server.pvc.claimName is not set: set it to a claim in the release namespace"},
		{[]string{"history.server.enabled=true", "history.server.pvc.claimName=h", "history.server.s3.bucket=b"},
			"history.server.s3 and history.server.pvc are both set: the server reads one store; remove one of them"},
		{[]string{"history.server.pvc.claimName=Claim_1"}, "/history/server/pvc/claimName"},
		{[]string{"history.server.pvc.prefix=/events"}, "/history/server/pvc/prefix"},
		{[]string{"history.server.pvc.prefix=a/../b"}, "/history/server/pvc/prefix"},
	} {
		checkRefused(t, tc.set, tc.want, "--kube-version", kubeVersion)
	}
}

// TestHistoryServerPodIsRestricted: the real API server's Pod Security
// admission takes the history server's pod in a namespace that enforces
// restricted, as it takes the webhook's.
func TestHistoryServerPodIsRestricted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := cluster.StartForTest(ctx, t, binDir(t))
	r := render(t, "history-server.yaml")
	apply(ctx, t, c, []string{"apiVersion: v1\nkind: Namespace\nmetadata: {name: restricted, labels: {pod-security.kubernetes.io/enforce: restricted}}"})
	for _, name := range []string{release + "-sparklet-history", release + "-sparklet"} {
		var d appsv1.Deployment
		r.get(t, "Deployment/"+releaseNS+"/"+name, &d)
		pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: d.Spec.Template.ObjectMeta, Spec: d.Spec.Template.Spec}
		pod.Name, pod.Namespace = name, "restricted"
		pod.Spec.ServiceAccountName = "" // Pod Security does not look at it; the account is not in this namespace
		doc, err := yaml.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Kubeconfig(), "create", "--dry-run=server", "-f", "-")
		cmd.Stdin = strings.NewReader(string(doc))
		if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "Warning") {
			t.Errorf("the pod of %s at Pod Security restricted: %v\n%s", name, err, out)
		}
	}
}
