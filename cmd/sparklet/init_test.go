//go:build !sidecaronly

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// injectedInit runs the webhook's patches over a driver pod that fetches
// annotation, under the given policy, and returns its init container.
func injectedInit(t *testing.T, policyYAML, annotation string) corev1.Container {
	t.Helper()
	p, err := policy.Parse([]byte(policyYAML), "dev")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "spark-jobs",
			Labels:      map[string]string{vocab.LabelRole: "driver"},
			Annotations: map[string]string{vocab.AnnotationFetch: annotation}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "spark", Image: "apache/spark:3.5.4",
			Args: []string{"driver", "--class", "org.apache.spark.examples.SparkPi", "local:///opt/spark/examples/jars/spark-examples.jar"}}}},
	}
	if res, err := patches.Driver(pod, patches.Input{Policy: p.For("spark-jobs"), Version: "test", AppID: "spark-test"}); err != nil || res.Skipped != nil {
		t.Fatalf("inject: skipped %+v, err %v", res.Skipped, err)
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == patches.InitName {
			return c
		}
	}
	t.Fatalf("no %s init container in %+v", patches.InitName, pod.Spec.InitContainers)
	return corev1.Container{}
}

// initRun is the injected init container run here: its args and env as
// injected, with the annotation file, dest and termination log moved to a
// temporary directory (a later flag wins).
type initRun struct {
	args                      []string
	annotation, dest, termLog string
}

func newInitRun(t *testing.T, c corev1.Container) *initRun {
	t.Helper()
	if len(c.Args) == 0 || c.Args[0] != "init" {
		t.Fatalf("init container args %q, want the init subcommand first", c.Args)
	}
	for _, e := range c.Env {
		t.Setenv(e.Name, e.Value)
	}
	dir := t.TempDir()
	r := &initRun{annotation: filepath.Join(dir, "fetch"), dest: filepath.Join(dir, "deps"), termLog: filepath.Join(dir, "termination-log")}
	r.args = append(append([]string(nil), c.Args[1:]...),
		"--annotation-file="+r.annotation, "--dest="+r.dest, "--termination-log="+r.termLog, "--backoff=1ms", "--log-level=error")
	return r
}

func (r *initRun) run(t *testing.T, annotation string) error {
	t.Helper()
	if err := os.WriteFile(r.annotation, []byte(annotation), 0o644); err != nil {
		t.Fatal(err)
	}
	return runInitArgs(r.args...)
}

func TestInitRunsUnderTheInjectedPolicy(t *testing.T) {
	jar := []byte("a jar's bytes")
	sum := sha256.Sum256(jar)
	pinned := hex.EncodeToString(sum[:])
	big := make([]byte, 2048)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/libs/big.jar" {
			_, _ = w.Write(big)
			return
		}
		_, _ = w.Write(jar)
	}))
	t.Cleanup(srv.Close)
	policyYAML := fmt.Sprintf("driver: {defaults: {serviceAccountName: spark-driver}}\nfetch:\n  allowedURLPrefixes: [%q]\n  requireSHA256: true\n  maxSize: 1Ki\n", srv.URL+"/libs/")
	annotation := fmt.Sprintf("- url: %s/libs/a.jar\n  sha256: %q\n", srv.URL, pinned)
	r := newInitRun(t, injectedInit(t, policyYAML, annotation))

	if err := r.run(t, annotation); err != nil {
		t.Fatalf("init under the injected policy: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(r.dest, "a.jar")); err != nil || string(got) != string(jar) {
		t.Fatalf("a.jar = %q, %v; want %q", got, err, jar)
	}

	// The annotation can change after admission; the policy still holds.
	err := r.run(t, fmt.Sprintf("%s/other/b.jar\n", srv.URL))
	for _, want := range []string{
		"entry 1 (" + srv.URL + "/other/b.jar): the platform policy (fetch.requireSHA256) requires a sha256",
		"the platform policy (fetch.allowedURLPrefixes) allows only URLs starting with " + srv.URL + "/libs/",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
	if msg, _ := os.ReadFile(r.termLog); err != nil && string(msg) != err.Error()+"\n" {
		t.Errorf("termination log %q, want %q", msg, err.Error()+"\n")
	}

	// maxSize travels too.
	if err := r.run(t, fmt.Sprintf("- url: %s/libs/big.jar\n  sha256: %q\n", srv.URL, pinned)); err == nil || !strings.Contains(err.Error(), "more than the 1.0 KiB allowed (fetch.maxSize in the platform policy)") {
		t.Errorf("a 2 KiB file under maxSize 1Ki: %v", err)
	}
}

func TestInitNamesThePolicyField(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`{"maxSiz":"1Gi"}`, `SPARKLET_FETCH_POLICY: unknown field fetch.maxSiz; the fetch policy has allowedURLPrefixes, requireSHA256, maxSize and timeout`},
		{`{"requireSHA256":"yes"}`, `SPARKLET_FETCH_POLICY: fetch.requireSHA256: want a bool, not a JSON string`},
		{`{"maxSize":"2GG","timeout":"10"}`, `SPARKLET_FETCH_POLICY: fetch.maxSize: "2GG" is not a quantity; write for example 500Mi or 2Gi; fetch.timeout: "10" is not a duration`},
		{`{"allowedURLPrefixes":["https://repo.example.com"]}`, `SPARKLET_FETCH_POLICY: fetch.allowedURLPrefixes[0]: "https://repo.example.com" must include the path after the host`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv(vocab.EnvFetchPolicy, tc.value)
			dir := t.TempDir()
			file, termLog := filepath.Join(dir, "fetch"), filepath.Join(dir, "termination-log")
			if err := os.WriteFile(file, []byte("https://repo.example.com/a.jar\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := runInitArgs("--annotation-file="+file, "--dest="+filepath.Join(dir, "deps"), "--termination-log="+termLog)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if msg, _ := os.ReadFile(termLog); string(msg) != err.Error()+"\n" {
				t.Errorf("termination log %q, want %q", msg, err.Error()+"\n")
			}
			if _, statErr := os.Stat(filepath.Join(dir, "deps")); !os.IsNotExist(statErr) {
				t.Errorf("dest was created under an invalid policy: %v", statErr)
			}
		})
	}
}

// runInitArgs runs `sparklet init` with args and returns its error.
func runInitArgs(args ...string) error {
	_, err := (&app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}).run(append([]string{"init"}, args...))
	return err
}
