package nodeimages

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestChartTestImageIsTheBuiltKubectl: helm test on the real node runs the
// chart's tests.image, so it must be the kubectl image build.sh makes,
// registry.k8s.io/kubectl at the Kubernetes version hack/cluster pins.
func TestChartTestImageIsTheBuiltKubectl(t *testing.T) {
	mod, err := os.ReadFile("../cluster/kubernetes/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^(?:require)?\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("hack/cluster/kubernetes/go.mod requires no k8s.io/kubernetes")
	}
	data, err := os.ReadFile("../../charts/sparklet/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Tests struct{ Image string }
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	if want := "registry.k8s.io/kubectl:" + string(m[1]); values.Tests.Image != want {
		t.Errorf("charts/sparklet/values.yaml tests.image is %q; build.sh builds %q (the pinned Kubernetes)", values.Tests.Image, want)
	}
}

func TestSandboxImage(t *testing.T) {
	if got := SandboxImage(); !regexp.MustCompile(`^registry\.k8s\.io/pause:\d+\.\d+(\.\d+)?$`).MatchString(got) {
		t.Errorf("SandboxImage() = %q, want registry.k8s.io/pause:<version>", got)
	}
}

func TestSelect(t *testing.T) {
	bin := t.TempDir()
	images := filepath.Join(bin, "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pause.tar", "kubectl.tar", "sparklet.tar", "spark-3.5.9.tar", "spark-4.3.0.tar"} {
		if err := os.WriteFile(filepath.Join(images, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Select(bin, "4.3.0")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pause.tar", "kubectl.tar", "sparklet.tar", "spark-4.3.0.tar"}
	for i := range want {
		want[i] = filepath.Join(images, want[i])
	}
	if !slices.Equal(got, want) {
		t.Errorf("Select(4.3.0) = %v, want %v", got, want)
	}
	if _, err := Select(bin, "4.0.5"); err == nil || !strings.Contains(err.Error(), "spark-4.0.5.tar missing: run make node-images") {
		t.Errorf("Select(4.0.5) without its tarball: error %v, want spark-4.0.5.tar named with make node-images", err)
	}
}
