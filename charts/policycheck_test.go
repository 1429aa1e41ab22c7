package charts

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/test/e2egate"
)

// valuesFile writes values to a temporary file and returns its path
// relative to testdata, as render takes it.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("testdata")
	rel, err := filepath.Rel(abs, f)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// runPolicyCheck runs the hook Job's container command with the sparklet
// binary, its mounted policy file replaced by the hook ConfigMap's content.
func runPolicyCheck(t *testing.T, r rendered) (string, int) {
	t.Helper()
	full := release + "-sparklet"
	var job batchv1.Job
	r.get(t, "Job/"+releaseNS+"/"+full+"-policy-check", &job)
	var cm corev1.ConfigMap
	r.get(t, "ConfigMap/"+releaseNS+"/"+full+"-policy-check", &cm)
	c := job.Spec.Template.Spec.Containers[0]
	if len(c.VolumeMounts) != 1 || job.Spec.Template.Spec.Volumes[0].ConfigMap == nil || job.Spec.Template.Spec.Volumes[0].ConfigMap.Name != cm.Name {
		t.Fatalf("the check does not mount its ConfigMap: %+v", job.Spec.Template.Spec)
	}
	dir := t.TempDir()
	args := slices.Clone(c.Args)
	for i, a := range args {
		if rest, ok := strings.CutPrefix(a, c.VolumeMounts[0].MountPath+"/"); ok {
			if err := os.WriteFile(filepath.Join(dir, rest), []byte(cm.Data[rest]), 0o644); err != nil {
				t.Fatal(err)
			}
			args[i] = filepath.Join(dir, rest)
		}
	}
	bin := filepath.Join(e2egate.BinDir(t, "with sparklet in it"), "sparklet")
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %s: %v", bin, err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

func TestPolicyCheckHook(t *testing.T) {
	full := release + "-sparklet"
	r := render(t)
	var job batchv1.Job
	r.get(t, "Job/"+releaseNS+"/"+full+"-policy-check", &job)
	var hookCM, cm corev1.ConfigMap
	r.get(t, "ConfigMap/"+releaseNS+"/"+full+"-policy-check", &hookCM)
	r.get(t, "ConfigMap/"+releaseNS+"/"+full+"-policy", &cm)
	for _, a := range []map[string]string{job.Annotations, hookCM.Annotations} {
		if a["helm.sh/hook"] != "pre-install,pre-upgrade" {
			t.Errorf("hook annotations %v, want pre-install,pre-upgrade", a)
		}
	}
	if hookCM.Annotations["helm.sh/hook-weight"] >= job.Annotations["helm.sh/hook-weight"] {
		t.Errorf("the ConfigMap (weight %s) must come before the Job (weight %s)", hookCM.Annotations["helm.sh/hook-weight"], job.Annotations["helm.sh/hook-weight"])
	}
	if hookCM.Data["policy.yaml"] != cm.Data["policy.yaml"] {
		t.Errorf("the check's policy differs from the release's:\n%s\n---\n%s", hookCM.Data["policy.yaml"], cm.Data["policy.yaml"])
	}
	if *job.Spec.BackoffLimit != 0 || job.Spec.Template.Spec.AutomountServiceAccountToken == nil || *job.Spec.Template.Spec.AutomountServiceAccountToken {
		t.Errorf("the check retries or holds a token: %+v", job.Spec)
	}

	if out, code := runPolicyCheck(t, r); code != 0 || !strings.Contains(out, ": valid") {
		t.Errorf("the default policy: exit %d\n%s", code, out)
	}
	bad := render(t, valuesFile(t, "policy:\n  limits: {maxExecutors: -1}\n  spark:\n    defaults: {spark.master: local}\n"))
	out, code := runPolicyCheck(t, bad)
	if code != 1 {
		t.Errorf("a bad policy: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"limits.maxExecutors: must not be negative", "spark.defaults.spark.master: reserved"} {
		if !strings.Contains(out, want) {
			t.Errorf("the check's output lacks %q:\n%s", want, out)
		}
	}

	off := render(t, valuesFile(t, "policyCheck: {enabled: false}\n"))
	for key := range off.docs {
		if strings.Contains(key, "policy-check") {
			t.Errorf("policyCheck.enabled=false still renders %s", key)
		}
	}
}
