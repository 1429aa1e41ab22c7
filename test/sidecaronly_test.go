package test

import (
	"os/exec"
	"strings"
	"testing"
)

// fatClients are client-go's packages that register or serve every
// built-in API group: linking any of them runs the init functions of all
// of k8s.io/api, which cmd/sparklet's sidecar-only build exists to avoid
// (internal/kubecore).
var fatClients = []string{
	"k8s.io/client-go/kubernetes",
	"k8s.io/client-go/informers",
	"k8s.io/client-go/discovery",
	"k8s.io/client-go/applyconfigurations",
}

// slimGroups are the API groups the sidecar-only build links: core/v1 and
// networking/v1, and the reviews that admit Spark Connect clients.
var slimGroups = map[string]bool{
	"k8s.io/api/core/v1": true, "k8s.io/api/networking/v1": true,
	"k8s.io/api/authentication/v1": true, "k8s.io/api/authorization/v1": true,
}

// TestSidecarOnlyBuildIsSlim: sparklet-sidecar links none of fatClients
// and no API group but slimGroups.
func TestSidecarOnlyBuildIsSlim(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "sidecaronly", module+"/cmd/sparklet").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list found %d dependencies", len(deps))
	}
	for _, d := range deps {
		for _, fat := range fatClients {
			if d == fat || strings.HasPrefix(d, fat+"/") {
				t.Errorf("the sidecar-only build links %s", d)
			}
		}
		if strings.HasPrefix(d, "k8s.io/api/") && !slimGroups[d] {
			t.Errorf("the sidecar-only build links API group %s", d)
		}
	}
}
