package spec

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestParseAnnotationForms parses every testdata/annotation input and
// compares the entries, and the Spark conf they produce, to its golden file.
func TestParseAnnotationForms(t *testing.T) {
	inputs, err := filepath.Glob("testdata/annotation/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		n++
		t.Run(filepath.Base(in), func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := ParseAnnotation(string(raw))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(struct {
				Entries   []Entry           `json:"entries"`
				SparkConf map[string]string `json:"sparkConf"`
			}{entries, SparkConf(entries)}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := in + ".golden"
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if strings.TrimSpace(string(want)) != string(got) {
				t.Errorf("%s: got\n%s\nwant\n%s", in, got, want)
			}
		})
	}
	if n < 4 {
		t.Fatalf("found %d inputs in testdata/annotation, want at least 4", n)
	}
}

func TestParseAnnotationErrors(t *testing.T) {
	hex64 := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, value, want string
	}{
		{"empty", "", `sparklet.io/fetch: empty`},
		{"only comments", "# nothing yet\n\n", `sparklet.io/fetch: empty`},
		{"empty list", "[]", `sparklet.io/fetch: empty list`},
		{"single object", `{"url": "https://h/a.jar"}`, `a single object; make it a list`},
		{"short form with a digest", "https://h/a.jar " + hex64, `line 1 "https://h/a.jar ` + hex64 + `": the short form is one URL per line`},
		{"bad yaml", "- url: [unclosed", `not a valid YAML or JSON list`},
		{"item is a number", "[1]", `sparklet.io/fetch entry 1 (): is a number`},
		{"unknown field", "- url: https://h/a.jar\n  sha: " + hex64, `entry 1 (https://h/a.jar): unknown field "sha"; an entry has url, sha256, dest and extract`},
		{"unquoted digest read as a number", "- url: https://h/a.jar\n  sha256: 1234", `entry 1 (https://h/a.jar): sha256 must be a string; quote it, or YAML reads it as a number`},
		{"missing url", "- dest: a.jar", `entry 1 (): url is missing`},
		{"ftp", "ftp://h/a.jar", `entry 1 (ftp://h/a.jar): url "ftp://h/a.jar": the scheme must be http or https`},
		{"no host", "https:///a.jar", `url "https:///a.jar": has no host`},
		{"credentials", "https://me:secret@h/a.jar", `must not carry credentials`},
		{"dot dot", "https://h/libs/../admin/a.jar", `must not contain . or .. path segments`},
		{"encoded dot dot", "https://h/libs/%2e%2e/admin/a.jar", `must not contain . or .. path segments`},
		{"short digest, second entry", "- https://h/a.jar\n- url: https://x/y.jar\n  sha256: abc", `sparklet.io/fetch entry 2 (https://x/y.jar): sha256 "abc" is not 64 hex digits`},
		{"not hex", "- url: https://h/a.jar\n  sha256: " + strings.Repeat("zz", 32), `is not 64 hex digits`},
		{"extract rar", "- url: https://h/a.rar\n  extract: rar", `extract "rar": must be tar.gz or zip`},
		{"no file name", "https://h/", `the URL has no file name to use; set dest`},
		{"archive with no name left", "- url: https://h/.tgz\n  extract: tar.gz", `the URL has no file name to use; set dest`},
		{"file name with a comma", "https://h/a,b.jar", `the file name "a,b.jar" cannot be used (contains ','`},
		{"absolute dest", "- url: https://h/a.jar\n  dest: /etc/a.jar", `dest "/etc/a.jar": must be relative to /opt/sparklet/deps`},
		{"dest leaves", "- url: https://h/a.jar\n  dest: ../a.jar", `dest "../a.jar": must be a clean path`},
		{"dest not clean", "- url: https://h/a.jar\n  dest: lib//a.jar", `dest "lib//a.jar": must be a clean path`},
		{"dest with dot dot inside", "- url: https://h/a.jar\n  dest: lib/../a.jar", `must be a clean path`},
		{"dest with space", "- url: https://h/a.jar\n  dest: my lib.jar", `dest "my lib.jar": contains ' '`},
		{"duplicate dest", "https://h/a.jar\nhttps://mirror/a.jar", `entry 2 (https://mirror/a.jar): dest "a.jar" is also entry 1's; set a distinct dest`},
		{"nested dest", "- url: https://h/env.tar.gz\n  extract: tar.gz\n- url: https://h/x.py\n  dest: env/x.py", `entry 2 (https://h/x.py): dest "env/x.py" and entry 1's dest "env" would be inside one another`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := ParseAnnotation(tc.value)
			if err == nil {
				t.Fatalf("accepted %q as %+v", tc.value, entries)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestSparkConf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []Entry
		want    map[string]string
	}{
		{"nothing", nil, map[string]string{}},
		{"every kind, in annotation order", []Entry{
			{URL: "https://h/z.jar", Dest: "z.jar"},
			{URL: "https://h/a.jar", Dest: "lib/a.JAR"},
			{URL: "https://h/m.py", Dest: "m.py"},
			{URL: "https://h/deps.zip", Dest: "deps.zip"},
			{URL: "https://h/x.egg", Dest: "x.egg"},
			{URL: "https://h/data.csv", Dest: "data.csv"},
			{URL: "https://h/noext", Dest: "noext"},
			{URL: "https://h/env.tar.gz", Dest: "env", Extract: TarGz},
			{URL: "https://h/models.zip", Dest: "models", Extract: Zip},
		}, map[string]string{
			"spark.jars":           "file:///opt/sparklet/deps/z.jar,file:///opt/sparklet/deps/lib/a.JAR",
			"spark.submit.pyFiles": "file:///opt/sparklet/deps/m.py,file:///opt/sparklet/deps/deps.zip,file:///opt/sparklet/deps/x.egg",
			"spark.files":          "file:///opt/sparklet/deps/data.csv,file:///opt/sparklet/deps/noext",
		}},
		{"only extracted archives", []Entry{{URL: "https://h/env.tar.gz", Dest: "env", Extract: TarGz}}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SparkConf(tc.entries); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}
