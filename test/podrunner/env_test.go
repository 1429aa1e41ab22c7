package podrunner

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches/submitargs"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "EMPTY": "", "B": "$(A)"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for in, want := range map[string]string{
		"plain":            "plain",
		"$(A)":             "a",
		"x$(A)y$(A)":       "xaya",
		"$(EMPTY)|":        "|",
		"$(MISSING)":       "$(MISSING)",
		"$$(A)":            "$(A)",
		"$$$(A)":           "$a",
		"$A":               "$A",
		"$":                "$",
		"a$":               "a$",
		"$(A":              "$(A",
		"$()":              "$()",
		"$(B)":             "$(A)", // no recursive expansion
		"100$ and $(A)$$x": "100$ and a$x",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExpandAgreesWithAdmission: the pod runner's kubelet expansion and the
// one admission reads command lines with (patches/submitargs.Expand),
// written apart, expand every string alike.
func TestExpandAgreesWithAdmission(t *testing.T) {
	vars := map[string]string{"A": "a", "EMPTY": "", "B": "$(A)", "C$": "c"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	admission := func(n string) (string, bool, bool) { v, ok := vars[n]; return v, ok, ok }
	parts := []string{"$", "(", ")", "A", "B", "C", "EMPTY", "x", "$$", "$("}
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		if got, _ := submitargs.Expand(prefix, admission); got != expand(prefix, lookup) {
			t.Errorf("%q: admission expands to %q, the pod runner to %q", prefix, got, expand(prefix, lookup))
		}
		if n == 0 {
			return
		}
		for _, p := range parts {
			gen(prefix+p, n-1)
		}
	}
	gen("", 5)
}

type fakeObjects struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (f fakeObjects) configMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
}

func (f fakeObjects) secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func field(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func TestContainerEnv(t *testing.T) {
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-1",
			Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"sparklet.io/conf": "a=1\nb=2"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"},
	}
	c := &corev1.Container{
		Name: "c",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("100Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
		},
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}, Prefix: "CM_"},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: &yes}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
		},
		Env: []corev1.EnvVar{
			{Name: "A", Value: "a"},
			{Name: "B", Value: "$(A)-$(CM_k1)-$(LATER)-$$(A)-$(KUBERNETES_SERVICE_HOST)"},
			{Name: "LATER", Value: "late"},
			field("NAME", "metadata.name"),
			field("NS", "metadata.namespace"),
			field("UID", "metadata.uid"),
			field("LABEL", "metadata.labels['app']"),
			field("CONF", "metadata.annotations['sparklet.io/conf']"),
			field("LABELS", "metadata.labels"),
			field("IP", "status.podIP"),
			field("IPS", "status.podIPs"),
			field("HOST", "status.hostIP"),
			field("NODE", "spec.nodeName"),
			field("SA", "spec.serviceAccountName"),
			{Name: "CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "CPU_REQ_M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "MEM_LIMIT_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "MEM_REQ", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1")}}},
			{Name: "FROM_CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k2"}}},
			{Name: "OPT_KEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "none", Optional: &yes}}},
			{Name: "OPT_CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k", Optional: &yes}}},
			{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "password"}}},
			{Name: "A", Value: "again-$(A)"},
			{Name: "KUBERNETES_SERVICE_PORT", Value: "override"},
		},
	}
	in := envInput{
		pod: pod, podIPs: []string{"10.213.0.5"}, hostIP: "10.213.0.1",
		allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Gi")},
		service:     map[string]string{"KUBERNETES_SERVICE_HOST": "10.213.0.1", "KUBERNETES_SERVICE_PORT": "6443"},
		objects: fakeObjects{
			cms:     map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"k1": "v1", "k2": "v2"}}},
			secrets: map[string]*corev1.Secret{"s": {Data: map[string][]byte{"password": []byte("pw"), "user": []byte("me")}}},
		},
	}
	got, err := containerEnv(context.Background(), in, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.EnvVar{
		{Name: "CM_k1", Value: "v1"}, {Name: "CM_k2", Value: "v2"},
		{Name: "password", Value: "pw"}, {Name: "user", Value: "me"},
		{Name: "A", Value: "again-a"},
		{Name: "B", Value: "a-v1-$(LATER)-$(A)-10.213.0.1"},
		{Name: "LATER", Value: "late"},
		{Name: "NAME", Value: "p"}, {Name: "NS", Value: "ns"}, {Name: "UID", Value: "u-1"},
		{Name: "LABEL", Value: "x"}, {Name: "CONF", Value: "a=1\nb=2"}, {Name: "LABELS", Value: `app="x"`},
		{Name: "IP", Value: "10.213.0.5"}, {Name: "IPS", Value: "10.213.0.5"}, {Name: "HOST", Value: "10.213.0.1"},
		{Name: "NODE", Value: "n1"}, {Name: "SA", Value: "sa"},
		{Name: "CPU_LIMIT", Value: "2"}, {Name: "CPU_REQ_M", Value: "250"},
		{Name: "MEM_LIMIT_MI", Value: "32768"}, {Name: "MEM_REQ", Value: "104857600"},
		{Name: "FROM_CM", Value: "v2"}, {Name: "FROM_SECRET", Value: "pw"},
		{Name: "KUBERNETES_SERVICE_PORT", Value: "override"},
		{Name: "KUBERNETES_SERVICE_HOST", Value: "10.213.0.1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("env:\n got %v\nwant %v", got, want)
	}
}

func TestContainerEnvErrors(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	in := envInput{pod: pod, objects: fakeObjects{cms: map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{}}}}}
	for name, e := range map[string]corev1.EnvVar{
		"missing configMap": {Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k"}}},
		"missing key":       {Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"}}},
		"missing secret":    {Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
		"bad field":         field("X", "metadata.generateName"),
	} {
		if _, err := containerEnv(context.Background(), in, &corev1.Container{Env: []corev1.EnvVar{e}}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCommandAndImageEnv(t *testing.T) {
	env := []corev1.EnvVar{{Name: "PATH", Value: "/bin"}, {Name: "X", Value: "x"}}
	if got, want := expandCommand([]string{"echo", "$(X)", "$$(X)", "$(Y)"}, env), []string{"echo", "x", "$(X)", "$(Y)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("expandCommand = %q, want %q", got, want)
	}
	if got, want := mergeEnv([]string{"PATH=/usr/bin", "JAVA_HOME=/j"}, env), []string{"PATH=/bin", "JAVA_HOME=/j", "X=x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mergeEnv = %q, want %q", got, want)
	}
}
