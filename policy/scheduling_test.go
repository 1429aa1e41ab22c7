package policy

import (
	"strings"
	"testing"
)

func TestSchedulingValidation(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"scheduling: {batchScheduler: volcano}\n", "scheduling.batchScheduler: \"volcano\" is not a batch scheduler sparklet knows; use one of yunikorn, kueue, none"},
		{"scheduling: {queue: root.a}\n", "scheduling.queue: needs a batch scheduler; set scheduling.batchScheduler to yunikorn or kueue"},
		{"scheduling: {batchScheduler: kueue, gangStyle: Hard}\n", "scheduling.gangStyle: only YuniKorn has placeholders"},
		{"scheduling: {batchScheduler: yunikorn, gangStyle: hard}\n", "scheduling.gangStyle: \"hard\" must be Soft or Hard"},
		{"scheduling: {batchScheduler: yunikorn, placeholderTimeout: \"10\"}\n", "scheduling.placeholderTimeout: \"10\" is not a duration"},
		{"scheduling: {batchScheduler: yunikorn, queue: \"root.a b\"}\n", "scheduling.queue: \"root.a b\" is not a YuniKorn queue path"},
		{"scheduling: {batchScheduler: kueue, queue: Team}\n", "scheduling.queue: \"Team\" is not a LocalQueue name"},
		{"scheduling: {batchScheduler: yunikorn, priorityClassName: Low}\n", "scheduling.priorityClassName: \"Low\" is not a PriorityClass name"},
		{"scheduling: {batchScheduler: yunikorn}\nexecutor: {enforced: {schedulerName: volcano}}\n", "scheduling.batchScheduler: yunikorn, but the policy's schedulerName is \"volcano\""},
		{"scheduling: {batchScheduler: kueue, queue: a, enforce: true}\nnamespaces: {x: {scheduling: {batchScheduler: none}}}\n", "namespaces.x.scheduling.batchScheduler: \"none\", but the cluster's scheduling enforces \"kueue\""},
		{"scheduling: {batchScheduler: yunikorn, queuee: a}\n", "scheduling.queuee"},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.doc), "dev")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", strings.TrimSpace(tc.doc), err, tc.want)
		}
	}
	for _, ok := range []string{
		"scheduling: {batchScheduler: yunikorn, queue: root.spark-jobs.team_a, placeholderTimeout: 10m, gangStyle: Hard, priorityClassName: batch}\n",
		"scheduling: {batchScheduler: kueue, queue: team-a, priorityClassName: low, enforce: true}\n",
		"scheduling: {batchScheduler: none}\n",
	} {
		if _, err := Parse([]byte(ok), "dev"); err != nil {
			t.Errorf("%s: %v", strings.TrimSpace(ok), err)
		}
	}
}

func TestNamespaceSchedulingKeepsTheClusterEnforcement(t *testing.T) {
	p, err := Parse([]byte("scheduling: {batchScheduler: kueue, queue: a, enforce: true}\nnamespaces: {x: {scheduling: {batchScheduler: kueue, queue: b}}}\n"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	s := p.For("x").Scheduling
	if s.Queue != "b" || !s.Enforce {
		t.Fatalf("namespace x: %+v; want queue b, still enforced", s)
	}
	if s := p.For("y").Scheduling; s.Queue != "a" {
		t.Fatalf("namespace y: %+v; want the cluster's", s)
	}
}
