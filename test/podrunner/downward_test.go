package podrunner

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMetadataField(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u",
		Labels:      map[string]string{"b": "2", "a": "1"},
		Annotations: map[string]string{"x/conf": "k=v\n\"q\"", "z": ""}}}
	for path, want := range map[string]string{
		"metadata.name":                   "p",
		"metadata.namespace":              "ns",
		"metadata.uid":                    "u",
		"metadata.labels":                 "a=\"1\"\nb=\"2\"",
		"metadata.annotations":            "x/conf=\"k=v\\n\\\"q\\\"\"\nz=\"\"",
		"metadata.annotations['x/conf']":  "k=v\n\"q\"",
		"metadata.annotations['missing']": "",
		"metadata.labels['a']":            "1",
	} {
		got, err := metadataField(pod, path)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, bad := range []string{"metadata.generateName", "metadata.name['x']", "spec.nodeName"} {
		if _, err := metadataField(pod, bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestDownwardFiles(t *testing.T) {
	mode := int32(0o600)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"conf": "a=1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
	}
	files, err := downwardFiles(pod, []corev1.DownwardAPIVolumeFile{
		{Path: "spark-defaults.conf", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['conf']"}},
		{Path: "sub/name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: &mode},
		{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu"}},
	}, 0o644, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]file{
		"spark-defaults.conf": {[]byte("a=1"), 0o644}, "sub/name": {[]byte("p"), 0o600},
		"mem": {[]byte("1024"), 0o644}, "cpu": {[]byte("16"), 0o644},
	}
	for k, w := range want {
		if g, ok := files[k]; !ok || string(g.data) != string(w.data) || g.mode != w.mode {
			t.Errorf("%s = %q %o, want %q %o", k, g.data, g.mode, w.data, w.mode)
		}
	}
	if len(files) != len(want) {
		t.Errorf("files %v, want %d", files, len(want))
	}
}

// TestWriteAtomic checks the kubelet's layout: user-visible names are
// symlinks into ..data, which an update swaps.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	changed, err := writeAtomic(dir, map[string]file{"a.conf": {[]byte("one"), 0o644}, "sub/b": {[]byte("b"), 0o600}})
	if err != nil || !changed {
		t.Fatalf("first write: %v, changed %v", err, changed)
	}
	if target, err := os.Readlink(filepath.Join(dir, "a.conf")); err != nil || target != "..data/a.conf" {
		t.Errorf("a.conf links to %q (%v), want ..data/a.conf", target, err)
	}
	first, _ := os.Readlink(filepath.Join(dir, "..data"))
	if info, err := os.Stat(filepath.Join(dir, "sub", "b")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("sub/b: %v %v", info, err)
	}
	if changed, err := writeAtomic(dir, map[string]file{"a.conf": {[]byte("one"), 0o644}, "sub/b": {[]byte("b"), 0o600}}); err != nil || changed {
		t.Errorf("same content: changed %v, %v", changed, err)
	}
	if _, err := writeAtomic(dir, map[string]file{"a.conf": {[]byte("two"), 0o644}}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "a.conf")); err != nil || string(data) != "two" {
		t.Errorf("a.conf = %q, %v; want two", data, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("sub survived the update: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("old data dir %s survived: %v", first, err)
	}
}
