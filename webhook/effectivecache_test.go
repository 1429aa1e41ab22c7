package webhook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sparklet/sparklet/policy"
)

func TestEffectiveCacheFollowsThePolicy(t *testing.T) {
	parse := func(doc string) *policy.Policy {
		p, err := policy.Parse([]byte(doc), "dev")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := parse("spark:\n  defaults:\n    spark.executor.instances: \"2\"\n")
	var c effectiveCache
	e1, j1, err := c.get(first, "a")
	if err != nil {
		t.Fatal(err)
	}
	if again, _, _ := c.get(first, "a"); again != e1 {
		t.Error("the same namespace under the same policy was merged again")
	}
	if want, _ := json.Marshal(first.For("a")); !bytes.Equal(j1, want) {
		t.Errorf("cached JSON = %s, want %s", j1, want)
	}
	if other, _, _ := c.get(first, "b"); other.Namespace != "b" {
		t.Errorf("namespace b got the policy of %q", other.Namespace)
	}
	reloaded := parse("spark:\n  defaults:\n    spark.executor.instances: \"5\"\n")
	e2, j2, _ := c.get(reloaded, "a")
	if e2.Spark.Defaults["spark.executor.instances"] != "5" || !bytes.Contains(j2, []byte(`"5"`)) {
		t.Errorf("after a reload namespace a still has %v, %s", e2.Spark.Defaults, j2)
	}
}

// TestConcurrentAdmissionsAgree admits every fixture from many goroutines
// at once (run with -race): the shared effective policy must come out as
// each admission alone makes it.
func TestConcurrentAdmissionsAgree(t *testing.T) {
	h := testHandler(t)
	files, err := filepath.Glob("testdata/*.pod.yaml")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	want := map[string]string{}
	for _, f := range files {
		resp := call(t, h, review(fixtureJSON(t, f))).Response
		want[f] = string(resp.Patch)
		if resp.Result != nil {
			want[f] = resp.Result.Message
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, f := range files {
				data, _ := os.ReadFile(f)
				raw, _ := yamlToJSON(data)
				resp := call(t, h, review(raw)).Response
				got := string(resp.Patch)
				if resp.Result != nil {
					got = resp.Result.Message
				}
				// Generated application ids differ between admissions;
				// the patches' lengths do not.
				if len(got) != len(want[f]) {
					t.Errorf("%s: concurrent admission gave %d bytes, alone %d", f, len(got), len(want[f]))
				}
			}
		}()
	}
	wg.Wait()
}
