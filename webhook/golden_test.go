package webhook

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/test/verify"
	"github.com/sparklet/sparklet/vocab"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func testHandler(t testing.TB) *Handler {
	t.Helper()
	return policyHandler(t, "testdata/policy.yaml")
}

// policyHandler is a Handler with the policy in file.
func policyHandler(t testing.TB, file string) *Handler {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(data, "dev")
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(&bytes.Buffer{})
	return &Handler{policy: func() *policy.Policy { return p }, metrics: newMetrics(), log: log.WithField("component", "webhook")}
}

// review wraps a pod's JSON in an AdmissionReview for a CREATE.
func review(raw []byte) []byte {
	r := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("0d7d3b0c-1111-4222-8333-444455556666"),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  podResource,
			Namespace: "spark-jobs",
			Operation: admissionv1.Create,
			Object:    runtimeRaw(raw),
		},
	}
	out, _ := json.Marshal(r)
	return out
}

// call sends body to the handler and decodes the AdmissionReview it answers.
func call(t testing.TB, h http.Handler, body []byte) admissionv1.AdmissionReview {
	t.Helper()
	rec := serve(h, http.MethodPost, "application/json", body)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("not an AdmissionReview (status %d): %s", rec.Code, rec.Body.String())
	}
	return out
}

// admitPod returns the pod as the API server would store it, or the
// refusal message.
func admitPod(t testing.TB, h http.Handler, raw []byte) (result []byte, refused string) {
	t.Helper()
	result, refused, _ = admitWithWarnings(t, h, raw)
	return result, refused
}

// admitWithWarnings is admitPod that also returns the admission warnings.
func admitWithWarnings(t testing.TB, h http.Handler, raw []byte) (result []byte, refused string, warnings []string) {
	t.Helper()
	resp := call(t, h, review(raw)).Response
	warnings = resp.Warnings
	if !resp.Allowed {
		return nil, resp.Result.Message, warnings
	}
	if len(resp.Patch) == 0 {
		return raw, "", warnings
	}
	return applied(t, raw, resp.Patch), "", warnings
}

// applied is raw with the JSON patch applied.
func applied(t testing.TB, raw, patch []byte) []byte {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func fixturesFS() ([]string, error) { return filepath.Glob("testdata/*.pod.yaml") }

func yamlToJSON(data []byte) ([]byte, error) { return yaml.YAMLToJSON(data) }

func fixtures(t *testing.T) []string {
	files, err := fixturesFS()
	if err != nil || len(files) < 12 {
		t.Fatalf("want at least 12 fixtures, found %d (%v)", len(files), err)
	}
	return files
}

func fixtureJSON(t *testing.T, file string) []byte {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestGolden(t *testing.T) {
	h := testHandler(t)
	for _, file := range fixtures(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".pod.yaml")
		t.Run(name, func(t *testing.T) {
			in := fixtureJSON(t, file)
			h := h
			// A fixture may come with a policy of its own.
			if own := "testdata/" + name + ".policy.yaml"; fileExists(own) {
				h = policyHandler(t, own)
			}
			out, refused, warnings := admitWithWarnings(t, h, in)
			compareWarnings(t, "testdata/"+name+".warnings.txt", warnings)
			var got []byte
			golden := "testdata/" + name + ".golden.yaml"
			if refused != "" {
				golden = "testdata/" + name + ".refused.txt"
				got = []byte(refused + "\n")
			} else {
				var err error
				if got, err = yaml.JSONToYAML(withGoldenAppID(t, in, out)); err != nil {
					t.Fatal(err)
				}
			}
			if strings.HasPrefix(name, "refuse-") != (refused != "") {
				t.Errorf("refused = %q; fixtures named refuse-* must be refused and only they", refused)
			}
			compareGolden(t, golden, got)
			if refused == "" {
				var pod corev1.Pod
				if err := json.Unmarshal(out, &pod); err != nil {
					t.Fatal(err)
				}
				// A pod left alone must come back exactly as it was sent.
				if _, injected := pod.Annotations[vocab.AnnotationStatus]; !injected {
					if !bytes.Equal(in, out) {
						t.Errorf("a pod sparklet left alone was changed:\n%s", out)
					}
				} else if problems := verify.Driver(&pod); len(problems) > 0 {
					t.Errorf("injected pod fails verification: %v", problems)
				}
			}
		})
	}
}

// goldenAppID stands in, in the golden files, for the application id the
// webhook generates for a pod that has none.
const goldenAppID = "spark-golden"

var generatedAppID = regexp.MustCompile(`^spark-[0-9a-f]{16}$`)

// withGoldenAppID returns the admitted pod out with the application id
// generated for it replaced by goldenAppID, and the sidecar's digest of
// the effective configuration, which holds the id, by the digest of the
// configuration so rewritten. A pod that arrived with an id it keeps is
// left as it is.
func withGoldenAppID(t *testing.T, in, out []byte) []byte {
	t.Helper()
	var sent, admitted corev1.Pod
	if err := json.Unmarshal(in, &sent); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &admitted); err != nil {
		t.Fatal(err)
	}
	id, labelled := admitted.Labels[vocab.LabelAppID]
	if !labelled || sent.Labels[vocab.LabelAppID] == id {
		return out
	}
	if !generatedAppID.MatchString(id) {
		t.Fatalf("generated application id %q is not spark- and 16 hex digits", id)
	}
	digest := patches.DeliveredDigest(&admitted)
	for k, v := range admitted.Annotations {
		admitted.Annotations[k] = strings.ReplaceAll(v, id, goldenAppID)
	}
	out = bytes.ReplaceAll(out, []byte(id), []byte(goldenAppID))
	return bytes.ReplaceAll(out, []byte(digest), []byte(patches.DeliveredDigest(&admitted)))
}

// compareWarnings compares the admission warnings, one a line, with a
// golden file, which exists exactly when there are warnings.
func compareWarnings(t *testing.T, path string, warnings []string) {
	t.Helper()
	if len(warnings) > 0 {
		compareGolden(t, path, []byte(strings.Join(warnings, "\n")+"\n"))
		return
	}
	if *update {
		_ = os.Remove(path)
		return
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("no warnings, but %s expects some (go test ./webhook -update removes it)", path)
	}
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./webhook -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("result differs from %s (go test ./webhook -update rewrites it):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// TestInjectTwiceEqualsOnce feeds every injected result back in: the
// webhook must answer with no patch.
func TestInjectTwiceEqualsOnce(t *testing.T) {
	h := testHandler(t)
	for _, file := range fixtures(t) {
		out, refused := admitPod(t, h, fixtureJSON(t, file))
		if refused != "" {
			continue
		}
		resp := call(t, h, review(out)).Response
		if !resp.Allowed || len(resp.Patch) != 0 {
			t.Errorf("%s: second injection gave allowed=%v patch=%s", file, resp.Allowed, resp.Patch)
		}
	}
}

func TestUnknownFieldsSurvive(t *testing.T) {
	out, refused := admitPod(t, testHandler(t), fixtureJSON(t, "testdata/unknown-field.pod.yaml"))
	if refused != "" {
		t.Fatal(refused)
	}
	for _, field := range []string{`"someFutureField":{"enabled":true}`, `"futureContainerField":"keep-me"`} {
		if !bytes.Contains(out, []byte(field)) {
			t.Errorf("%s was dropped:\n%s", field, out)
		}
	}
}

func runtimeRaw(raw []byte) runtime.RawExtension { return runtime.RawExtension{Raw: raw} }
