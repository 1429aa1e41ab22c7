package spark

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPinned(t *testing.T) {
	dists, err := Pinned()
	if err != nil {
		t.Fatal(err)
	}
	if len(dists) == 0 {
		t.Fatal("hack/spark/versions pins nothing")
	}
	for _, d := range dists {
		if len(d.SHA256) != 64 || strings.Trim(d.SHA256, "0123456789abcdef") != "" {
			t.Errorf("spark %s: sha256 %q is not 64 hex digits", d.Version, d.SHA256)
		}
		if d.Scala != "2.12" && d.Scala != "2.13" {
			t.Errorf("spark %s: scala %q, want 2.12 or 2.13", d.Version, d.Scala)
		}
	}
}

func TestParse(t *testing.T) {
	dists, err := parse("# comment\n\n4.0.5 2.13 b\n3.5.9 2.12 a\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(dists) != 2 || dists[0] != (Dist{"3.5.9", "2.12", "a", 3, 5}) || dists[1] != (Dist{"4.0.5", "2.13", "b", 4, 0}) {
		t.Errorf("got %+v, want 3.5.9 then 4.0.5", dists)
	}
	if got := dists[0].ExamplesJar(); got != "examples/jars/spark-examples_2.12-3.5.9.jar" {
		t.Errorf("examples jar %s", got)
	}
	for text, want := range map[string]string{
		"3.5.9 2.12\n":                 "line 1: want version, scala and sha256",
		"3.5.9 2.12 a b\n":             "line 1: want version, scala and sha256",
		"# c\n3.5 2.12 a\n":            `line 2: version "3.5" is not major.minor.patch`,
		"3.x.9 2.12 a\n":               `version "3.x.9"`,
		"3.5.9 2.12 a\n3.5.8 2.12 b\n": "pins 3.5.9 and 3.5.8: one per major.minor",
	} {
		if _, err := parse(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parse(%q): error %v, want %q", text, err, want)
		}
	}
}

func TestInstalled(t *testing.T) {
	bin := t.TempDir()
	d := Dist{Version: "3.5.9", Scala: "2.12", SHA256: "a"}
	if err := d.Installed(bin); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("no stamp: error %v, want not installed", err)
	}
	if err := os.MkdirAll(d.Home(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	for stamp, want := range map[string]string{
		"3.5.9 2.12 a layout=1\n": "",
		"3.5.9 2.12 b layout=1\n": "another pin",
		"3.5.9 2.13 a\n":          "another pin",
		"":                        "another pin",
	} {
		if err := os.WriteFile(filepath.Join(d.Home(bin), ".stamp"), []byte(stamp), 0o644); err != nil {
			t.Fatal(err)
		}
		err := d.Installed(bin)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("stamp %q: error %v, want %q", stamp, err, want)
		}
	}
}

func TestRetarget(t *testing.T) {
	d := Dist{Version: "4.3.0", Scala: "2.13"}
	in := "image: apache/spark:3.5.4\nargs: [local:///opt/spark/examples/jars/spark-examples_2.12-3.5.4.jar, \"100\"]\n"
	want := "image: apache/spark:4.3.0\nargs: [local:///opt/spark/examples/jars/spark-examples_2.13-4.3.0.jar, \"100\"]\n"
	if got := string(d.Retarget([]byte(in))); got != want {
		t.Errorf("Retarget:\n%s\nwant\n%s", got, want)
	}
}

func TestConnectJar(t *testing.T) {
	j, err := ConnectJar()
	if err != nil {
		t.Fatal(err)
	}
	if j.Group != "org.apache.spark" || !strings.HasPrefix(j.Artifact, "spark-connect_2.12") || len(j.SHA256) != 64 {
		t.Errorf("hack/spark/connect-jar pins %+v, want a spark-connect_2.12 jar with a sha256", j)
	}
}
