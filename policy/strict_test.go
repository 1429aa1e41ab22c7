package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestSparkConfScalarsAreStrings(t *testing.T) {
	p, err := Parse([]byte(`spark:
  defaults:
    spark.executor.cores: 4
    spark.memory.fraction: 0.60
    spark.eventLog.enabled: true
    spark.speculation: yes
    spark.executor.memory: 4g
    spark.kryoserializer.buffer.max: "64m"
  enforced:
    spark.dynamicAllocation.enabled: false
namespaces:
  team-a:
    spark:
      defaults: {spark.executor.instances: 10, spark.task.cpus: 1e0}
`), "dev")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"spark.executor.cores": "4", "spark.memory.fraction": "0.60", "spark.eventLog.enabled": "true",
		"spark.speculation": "yes", "spark.executor.memory": "4g", "spark.kryoserializer.buffer.max": "64m",
	} {
		if got := p.Spark.Defaults[k]; got != want {
			t.Errorf("spark.defaults.%s = %q, want %q as written", k, got, want)
		}
	}
	if got := p.Spark.Enforced["spark.dynamicAllocation.enabled"]; got != "false" {
		t.Errorf("spark.enforced.spark.dynamicAllocation.enabled = %q", got)
	}
	ns := p.Namespaces["team-a"].Spark.Defaults
	if ns["spark.executor.instances"] != "10" || ns["spark.task.cpus"] != "1e0" {
		t.Errorf("namespace conf = %v", ns)
	}
}

func TestStrictDecoding(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		want         []string // every problem, in any order
	}{
		{
			name:   "a duplicate top-level key",
			policy: "limits: {maxExecutors: 5}\nallowedImages: [a/*]\nlimits: {maxExecutors: 50}\n",
			want:   []string{`limits: key "limits" appears twice (lines 1 and 3); keep one`},
		},
		{
			name:   "a duplicate Spark key",
			policy: "spark:\n  defaults:\n    spark.executor.memory: 4g\n    spark.executor.cores: 2\n    spark.executor.memory: 8g\n",
			want:   []string{`spark.defaults.spark.executor.memory: key "spark.executor.memory" appears twice (lines 3 and 5); keep one`},
		},
		{
			name:   "duplicates in a namespace and in a list item",
			policy: "namespaces:\n  a: {}\n  a: {}\ndriver:\n  defaults:\n    tolerations:\n    - {key: k, key: j}\n",
			want: []string{`driver.defaults.tolerations[0].key: key "key" appears twice (lines 7 and 7); keep one`,
				`namespaces.a: key "a" appears twice (lines 2 and 3); keep one`},
		},
		{
			name:   "an empty Spark value",
			policy: "spark:\n  enforced:\n    spark.eventLog.dir:\n",
			want:   []string{`spark.enforced.spark.eventLog.dir: no value; write "" for an empty one or remove the key`},
		},
		{
			name:   "a list where a Spark value goes stays an error",
			policy: "spark:\n  defaults:\n    spark.jars: [a.jar]\n",
			want:   []string{"spark.defaults.spark.jars: want a string, number or boolean, got a list; Spark reads every value as one string"},
		},
		{
			name:   "toleration operator Exist",
			policy: "executor:\n  defaults:\n    tolerations:\n    - {key: gpu, operator: Exist, effect: NoSchedule}\n",
			want:   []string{`executor.defaults.tolerations[0].operator: Unsupported value: "Exist": supported values: "Equal", "Exists", "Lt", "Gt"`},
		},
		{
			name: "tolerations against the API's rules",
			policy: "namespaces:\n  team-a:\n    driver:\n      enforced:\n        tolerations:\n" +
				"        - {operator: Equal, value: x}\n        - {key: a, operator: Exists, value: x}\n        - {key: b, effect: NoScheduling}\n        - {key: c, operator: Gt, value: ten}\n        - {operator: Exists}\n",
			want: []string{
				`namespaces.team-a.driver.enforced.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when ` + "`key`" + ` is empty, which means "match all values and all keys"`,
				`namespaces.team-a.driver.enforced.tolerations[1].value: Invalid value: "x": value must be empty when ` + "`operator`" + ` is 'Exists'`,
				`namespaces.team-a.driver.enforced.tolerations[2].effect: Unsupported value: "NoScheduling": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
				`namespaces.team-a.driver.enforced.tolerations[3].value: Invalid value: "ten": must be an integer when ` + "`operator`" + ` is 'Lt' or 'Gt'`,
			},
		},
		{
			name: "env, volumes, mounts and security contexts",
			policy: `executor:
  defaults:
    env:
    - {name: A, valueFrom: {secretKeyRef: {name: s, key: k}, configMapKeyRef: {name: c, key: k}}}
    - {name: B, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    volumes:
    - {name: both, emptyDir: {}, secret: {secretName: s}}
    - {name: none}
    - {name: host, hostPath: {path: /x, type: Dir}}
    - {name: ram, emptyDir: {medium: RAM}}
    volumeMounts:
    - {name: ram, mountPath: /ram, mountPropagation: Both}
    securityContext:
      seccompProfile: {type: Default}
      fsGroupChangePolicy: Sometimes
    containerSecurityContext:
      seccompProfile: {type: Localhost}
      appArmorProfile: {type: RuntimeDefault, localhostProfile: p}
      procMount: Masked
    resources:
      requests: {memory: 2Gi}
      limits: {memory: 1Gi}
`,
			want: []string{
				`executor.defaults.containerSecurityContext.appArmorProfile.localhostProfile: Invalid value: "p": must be set if and only if type is Localhost`,
				`executor.defaults.containerSecurityContext.procMount: Unsupported value: "Masked": supported values: "Default", "Unmasked"`,
				`executor.defaults.containerSecurityContext.seccompProfile.localhostProfile: Invalid value: null: must be set if and only if type is Localhost`,
				`executor.defaults.env[0].valueFrom: Invalid value: "": may have exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef; it has 2`,
				`executor.defaults.env[1].valueFrom: Invalid value: "": may not be specified when ` + "`value`" + ` is not empty`,
				`executor.defaults.resources.requests[memory]: Invalid value: "2Gi": must be less than or equal to the memory limit 1Gi`,
				`executor.defaults.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "OnRootMismatch", "Always"`,
				`executor.defaults.securityContext.seccompProfile.type: Unsupported value: "Default": supported values: "RuntimeDefault", "Unconfined", "Localhost"`,
				`executor.defaults.volumeMounts[0].mountPropagation: Unsupported value: "Both": supported values: "None", "HostToContainer", "Bidirectional"`,
				`executor.defaults.volumes[0]: Invalid value: "both": must have exactly one volume source (configMap, secret, emptyDir, persistentVolumeClaim, ...); it has 2`,
				`executor.defaults.volumes[1]: Invalid value: "none": must have exactly one volume source (configMap, secret, emptyDir, persistentVolumeClaim, ...); it has 0`,
				`executor.defaults.volumes[2].hostPath.type: Unsupported value: "Dir": supported values: "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"`,
				`executor.defaults.volumes[3].emptyDir.medium: Unsupported value: "RAM": supported values: "", "Memory", "HugePages"`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, tc.policy, tc.want) })
	}
}

// wantProblems parses policy and wants it refused with exactly the
// problems want, in any order.
func wantProblems(t *testing.T, policy string, want []string) {
	t.Helper()
	_, err := Parse([]byte(policy), "dev")
	if err == nil {
		t.Fatal("accepted")
	}
	got := slices.Sorted(slices.Values(Problems(err)))
	if strings.Join(got, "\n") != strings.Join(slices.Sorted(slices.Values(want)), "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestImagePatternsMatchNormalisedReferences(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		pattern, image string
		allowed        bool
	}{
		{"apache/spark:*", "apache/spark:3.5.4", true},
		{"apache/spark:*", "docker.io/apache/spark:3.5.4", true},
		{"apache/spark:*", "index.docker.io/apache/spark:3.5.4", true},
		{"docker.io/apache/spark:*", "apache/spark:4.0.0", true},
		{"apache/spark:*", "apache/spark", true}, // pulled as :latest
		{"apache/spark:3.5.*", "apache/spark:4.0.0", false},
		{"apache/spark:*", "apache/spark-py:3.5.4", false},
		{"apache/spark:*", "evil.example.com/apache/spark:3.5.4", false},
		{"spark:*", "spark:3.5.4", true},
		{"spark:*", "docker.io/library/spark:3.5.4", true},
		{"library/spark:*", "spark:3.5.4", true},
		{"docker.io/library/spark:*", "spark", true},
		{"spark:*", "apache/spark:3.5.4", false},
		{"apache/spark@sha256:*", "apache/spark@" + digest, true},
		{"apache/spark@sha256:*", "apache/spark:3.5.4@" + digest, true},
		{"apache/spark:3.5.4", "apache/spark:3.5.4@" + digest, true},
		{"apache/spark@sha256:*", "apache/spark:3.5.4", false},
		{"ghcr.io/example/*", "ghcr.io/example/spark:1", true},
		{"ghcr.io/example/*", "ghcr.io/example/team/spark:1", false},
		{"localhost:5000/spark:*", "localhost:5000/spark:dev", true},
		{"*", "spark:3", true},
		{"*/*", "apache/spark:3", true},
	} {
		t.Run(tc.pattern+" "+tc.image, func(t *testing.T) {
			p, err := Parse([]byte("allowedImages: ['"+tc.pattern+"']\n"), "dev")
			if err != nil {
				t.Fatal(err)
			}
			err = p.For("ns").CheckImage(tc.image)
			if (err == nil) != tc.allowed {
				t.Errorf("allowed %v (%v), want %v", err == nil, err, tc.allowed)
			}
		})
	}
	p, _ := Parse([]byte("allowedImages: ['apache/spark:*']\n"), "dev")
	if err := p.For("ns").CheckImage("Apache/Spark:3"); err == nil || !strings.Contains(err.Error(), `image "Apache/Spark:3" is not a valid image reference`) {
		t.Errorf("an invalid reference: %v", err)
	}
}
