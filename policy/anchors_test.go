package policy

import (
	"maps"
	"os"
	"testing"
)

// TestAnchorsAndAliases: values reached through an alias or a merge key
// are read as written, with a mapping's own keys winning over merged
// ones and the first merged mapping over later ones (YAML 1.1 merge).
func TestAnchorsAndAliases(t *testing.T) {
	data, err := os.ReadFile("testdata/anchors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data, "dev")
	if err != nil {
		t.Fatal(err)
	}
	common := map[string]string{"spark.executor.cores": "4", "spark.memory.fraction": "0.60",
		"spark.eventLog.enabled": "true", "spark.speculation": "yes"}
	teamA := map[string]string{"spark.executor.cores": "8", "spark.memory.fraction": "0.60",
		"spark.eventLog.enabled": "true", "spark.speculation": "yes"}
	for _, tc := range []struct {
		where     string
		got, want map[string]string
	}{
		{"spark.enforced", p.Spark.Enforced, common},
		{"namespaces.team-a.spark.defaults", p.Namespaces["team-a"].Spark.Defaults, map[string]string{"spark.executor.instances": "2"}},
		{"namespaces.team-a.spark.enforced", p.Namespaces["team-a"].Spark.Enforced, teamA},
		{"namespaces.team-b.spark.enforced", p.Namespaces["team-b"].Spark.Enforced, teamA},
		{"namespaces.team-c.spark.enforced", p.Namespaces["team-c"].Spark.Enforced, map[string]string{"spark.executor.cores": "1",
			"spark.executor.memory": "2g", "spark.memory.fraction": "0.60", "spark.eventLog.enabled": "true", "spark.speculation": "yes"}},
	} {
		if !maps.Equal(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.where, tc.got, tc.want)
		}
	}
	if p.Namespaces["team-b"].Limits.MaxExecutors != 10 {
		t.Errorf("namespaces.team-b.limits.maxExecutors = %d, want 10 from the alias", p.Namespaces["team-b"].Limits.MaxExecutors)
	}
}

// TestErrorsNameTheirPath: a bad value names the path where it takes
// effect, map keys included, also when it arrives through an alias.
func TestErrorsNameTheirPath(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		want         []string
	}{
		{
			name:   "a list in an enforced map through an alias",
			policy: "x-bad: &bad\n  spark.executor.cores: [4]\nnamespaces:\n  team-a:\n    spark:\n      enforced: *bad\n",
			want:   []string{"namespaces.team-a.spark.enforced.spark.executor.cores: want a string, number or boolean, got a list; Spark reads every value as one string"},
		},
		{
			name:   "a merged null",
			policy: "x-bad: &bad\n  spark.eventLog.dir:\nspark:\n  enforced:\n    <<: *bad\n    spark.executor.cores: 2\n",
			want:   []string{`spark.enforced.spark.eventLog.dir: no value; write "" for an empty one or remove the key`},
		},
		{
			name:   "wrong kinds under a namespace",
			policy: "namespaces:\n  team-a:\n    limits: {maxExecutors: ten}\n    allowedImages: apache/spark:*\n    sidecar: {}\n",
			want: []string{
				"namespaces.team-a.allowedImages: want a list, got a string",
				"namespaces.team-a.limits.maxExecutors: want a number, got a string",
				"namespaces.team-a.sidecar: unknown field (known fields: allowedImages, connect, credentials, driver, executor, fetch, history, limits, logs, metrics, scheduling, spark, ui)",
			},
		},
		{
			name:   "every problem of a namespace's fetch section, through an alias",
			policy: "x-fetch: &f\n  allowedURLPrefixes: [\"https://repo.example.com/%2e%2e/\"]\n  maxSize: 2GG\nnamespaces:\n  team-a:\n    fetch: *f\n",
			want: []string{
				`namespaces.team-a.fetch.allowedURLPrefixes[0]: "https://repo.example.com/%2e%2e/" path: must not contain . or .. path segments, also not percent-encoded (%2e) or with ;parameters; write the path out`,
				`namespaces.team-a.fetch.maxSize: "2GG" is not a quantity; write for example 500Mi or 2Gi`,
			},
		},
		{
			name:   "a fraction where a whole number goes",
			policy: "limits: {maxExecutors: 2.5}\n",
			want:   []string{"limits.maxExecutors: want a whole number, got 2.5"},
		},
		{
			name:   "a mapping where a string goes, through an alias",
			policy: "x-m: &m {a: b}\nhadoopConfigMap: *m\n",
			want:   []string{"hadoopConfigMap: want a string, got a mapping"},
		},
		{
			name:   "x- keys are ignored only at the top level",
			policy: "namespaces:\n  team-a:\n    x-note: hi\n",
			want:   []string{"namespaces.team-a.x-note: unknown field (known fields: allowedImages, connect, credentials, driver, executor, fetch, history, limits, logs, metrics, scheduling, spark, ui)"},
		},
		{
			name: "nested aliases that expand without end",
			policy: "x-a: &a [x, x, x, x, x, x, x, x, x, x]\nx-b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
				"x-c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nx-d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n" +
				"x-e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nx-f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
			want: []string{"not valid YAML: yaml: document contains excessive aliasing"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, tc.policy, tc.want) })
	}
}
