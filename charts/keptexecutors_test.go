package charts

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/vocab"
)

// TestKeptExecutorReaper renders the chart without and with a policy that
// keeps failed executors: only with one does the webhook run
// --reap-kept-executors with its token and may list, watch and delete
// pods: in namespaces.list's namespaces with selector list, cluster-wide
// with selector label (labelled namespaces are not known when rendering).
func TestKeptExecutorReaper(t *testing.T) {
	full := release + "-sparklet"
	cases := []struct {
		values     []string
		reap       bool
		namespaces []string // RoleBindings; nil for a ClusterRoleBinding
	}{
		{values: nil},
		{values: []string{"namespace-list.yaml"}},
		{values: []string{"keep-failed.yaml"}, reap: true},
		{values: []string{"keep-failed-namespace.yaml"}, reap: true},
		{values: []string{"keep-failed.yaml", "namespace-list.yaml"}, reap: true, namespaces: []string{"team-a", "team-b"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(append([]string{"default"}, tc.values...), "+"), func(t *testing.T) {
			r := render(t, tc.values...)
			var d appsv1.Deployment
			r.get(t, "Deployment/"+releaseNS+"/"+full, &d)
			args := d.Spec.Template.Spec.Containers[0].Args
			var sa corev1.ServiceAccount
			r.get(t, "ServiceAccount/"+releaseNS+"/"+full, &sa)
			token := d.Spec.Template.Spec.AutomountServiceAccountToken
			_, role := r.docs["ClusterRole//"+full+"-kept-executors"]
			_, crb := r.docs["ClusterRoleBinding//"+full+"-kept-executors"]
			var bound []string
			for key := range r.docs {
				if ns, ok := strings.CutPrefix(key, "RoleBinding/"); ok && strings.HasSuffix(ns, "/"+full+"-kept-executors") {
					bound = append(bound, strings.TrimSuffix(ns, "/"+full+"-kept-executors"))
				}
			}
			slices.Sort(bound)
			if !tc.reap {
				if slices.Contains(args, "--reap-kept-executors") || role || crb || len(bound) > 0 || *token || *sa.AutomountServiceAccountToken {
					t.Errorf("no policy keeps failed executors, yet args %q, ClusterRole %v, ClusterRoleBinding %v, RoleBindings %v, token %v/%v",
						args, role, crb, bound, *token, *sa.AutomountServiceAccountToken)
				}
				return
			}
			if !slices.Contains(args, "--reap-kept-executors") || !*token || !*sa.AutomountServiceAccountToken {
				t.Errorf("args %q, token %v/%v; want --reap-kept-executors with the ServiceAccount's token", args, *token, *sa.AutomountServiceAccountToken)
			}
			var cr rbacv1.ClusterRole
			r.get(t, "ClusterRole//"+full+"-kept-executors", &cr)
			want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "delete"}}}
			if !reflect.DeepEqual(cr.Rules, want) {
				t.Errorf("ClusterRole rules %+v, want only list, watch and delete on pods", cr.Rules)
			}
			subject := rbacv1.Subject{Kind: "ServiceAccount", Name: full, Namespace: releaseNS}
			ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: full + "-kept-executors"}
			reapNS := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--reap-namespaces=") })
			if tc.namespaces == nil {
				var b rbacv1.ClusterRoleBinding
				r.get(t, "ClusterRoleBinding//"+full+"-kept-executors", &b)
				if b.RoleRef != ref || !reflect.DeepEqual(b.Subjects, []rbacv1.Subject{subject}) || len(bound) > 0 || reapNS >= 0 {
					t.Errorf("selector label: ClusterRoleBinding %+v %+v, RoleBindings %v, args %q; want the webhook bound cluster-wide", b.RoleRef, b.Subjects, bound, args)
				}
				return
			}
			if crb || !slices.Equal(bound, tc.namespaces) {
				t.Errorf("selector list: ClusterRoleBinding %v, RoleBindings in %v; want RoleBindings in %v only", crb, bound, tc.namespaces)
			}
			for _, ns := range bound {
				var b rbacv1.RoleBinding
				r.get(t, "RoleBinding/"+ns+"/"+full+"-kept-executors", &b)
				if b.RoleRef != ref || !reflect.DeepEqual(b.Subjects, []rbacv1.Subject{subject}) {
					t.Errorf("RoleBinding in %s: %+v %+v", ns, b.RoleRef, b.Subjects)
				}
			}
			if reapNS < 0 || args[reapNS] != "--reap-namespaces="+strings.Join(tc.namespaces, ",") {
				t.Errorf("args %q, want --reap-namespaces=%s", args, strings.Join(tc.namespaces, ","))
			}
		})
	}
}

// reapsKeptExecutors creates, while the chart's webhook replicas run with
// its ServiceAccount's token, an executor kept until a second ago in a
// listed namespace and one outside the list: the first is deleted, the
// second stays.
func reapsKeptExecutors(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	t.Helper()
	past := strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10)
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "kept-exec", Namespace: ns, Labels: map[string]string{vocab.LabelRole: "executor", vocab.LabelKeptUntil: past}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "spark-kubernetes-executor", Image: "apache/spark:4.3.0"}}},
		}
	}
	client := c.Client()
	start := time.Now()
	for _, ns := range []string{"team-a", "team-c"} {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod(ns), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("team-a").Get(ctx, "kept-exec", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil, nil
	})
	if err != nil {
		t.Fatalf("the webhook did not delete an expired kept executor in team-a: %v", err)
	}
	t.Logf("an expired kept executor deleted by the chart's webhook %v after it was created", time.Since(start).Round(time.Millisecond))
	p, err := client.CoreV1().Pods("team-c").Get(ctx, "kept-exec", metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("kept executor in team-c, outside namespaces.list: %v; want it left alone", err)
	case p.DeletionTimestamp != nil:
		t.Error("kept executor in team-c, outside namespaces.list, deleted; want it left alone")
	}
}
