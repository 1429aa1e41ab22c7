package charts

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestConnectReviewsRBAC: the driver ServiceAccount of every listed
// namespace may create TokenReviews and SubjectAccessReviews, which the
// sidecar of a Spark Connect server asks for each client
// (docs/connect.md), through the built-in system:auth-delegator.
func TestConnectReviewsRBAC(t *testing.T) {
	r := render(t, "namespace-list.yaml")
	var crb rbacv1.ClusterRoleBinding
	r.get(t, "ClusterRoleBinding//"+release+"-sparklet-driver-reviews", &crb)
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != "system:auth-delegator" {
		t.Errorf("roleRef %+v, want ClusterRole system:auth-delegator", crb.RoleRef)
	}
	got := map[string]bool{}
	for _, s := range crb.Subjects {
		if s.Kind == "ServiceAccount" && s.Name == "spark-driver" {
			got[s.Namespace] = true
		}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if !got[ns] {
			t.Errorf("subjects %+v lack the driver ServiceAccount of %s", crb.Subjects, ns)
		}
	}
}
