package sparkconf

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// load is Load, failing t on an error.
func load(t testing.TB, text string) map[string]string {
	t.Helper()
	m, err := Load(text)
	if err != nil {
		t.Fatalf("load %q: %v", text, err)
	}
	return m
}

func TestLoadProperties(t *testing.T) {
	cases := []struct {
		text string
		want map[string]string
	}{
		{"a b\nc=d\ne:f\n g  =  h  \n", map[string]string{"a": "b", "c": "d", "e": "f", "g": "h  "}},
		{"# c\n! c\n  # c\na=1\\\n   2\\\r\n3\n", map[string]string{"a": "123"}},
		{"a=x\\ny\\t\\u0041\\=\\:\\\\\\q", map[string]string{"a": "x\ny\tA=:\\q"}},
		{"a\\ b=c d", map[string]string{"a b": "c d"}},
		{"a", map[string]string{"a": ""}},
		{"a:=b", map[string]string{"a": "=b"}},
		{"a \\\n# not a comment", map[string]string{"a": "# not a comment"}},
		{"\\\n# a comment after an empty continuation\nb c", map[string]string{"b": "c"}},
		{"a=b\\", map[string]string{"a": "b"}},
		{"\\", map[string]string{"": ""}},
		{"a=1\ra=2\r\n", map[string]string{"a": "2"}},
		{"k=\\uD83D\\uDE00é", map[string]string{"k": "😀é"}},
	}
	for _, tc := range cases {
		if got := load(t, tc.text); !maps.Equal(got, tc.want) {
			t.Errorf("load(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	for _, bad := range []string{"a=\\u12", "a=\\uzzzz", "\\u00"} {
		if _, err := loadProperties(bad); err == nil || !strings.Contains(err.Error(), "line 1: malformed") {
			t.Errorf("load(%q): err = %v, want a malformed escape on line 1", bad, err)
		}
	}
}

// confFixtures are configurations that need escaping, and every effective
// configuration in the webhook's golden files (sparklet.io/spark-conf
// overlaid with sparklet.io/effective-conf).
func confFixtures(t testing.TB) []map[string]string {
	t.Helper()
	fixtures := []map[string]string{
		{"spark.a": "", "spark.b": " leading", "spark.c": "trailing ", "spark.d": "=x", "spark.e": ":x", "spark.f": "a=b:c#d!e"},
		{"spark.g": `C:\temp\new`, "spark.h": "tab\there", "spark.i": "\f", "spark.j": "é😀\u2028\u0085", "spark.k": "\\"},
		{"spark.key with space": "v", "spark.key=eq": "v", "spark.key:colon": "v", "#spark.hash": "v", "!bang": "v", " lead": "v"},
		{"spark.driver.extraJavaOptions": `-Dx="a b" -Dy=\u0041 -Dz=\\n`, "spark.ctl": "\x01\x1f\x7f"},
	}
	goldens, err := filepath.Glob("../../webhook/testdata/*.golden.yaml")
	if err != nil || len(goldens) == 0 {
		t.Fatalf("golden files: %v %v", goldens, err)
	}
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		var pod struct {
			Metadata struct{ Annotations map[string]string }
		}
		if err := yaml.Unmarshal(data, &pod); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		if effective, ok := pod.Metadata.Annotations["sparklet.io/effective-conf"]; ok {
			conf, err := Parse(pod.Metadata.Annotations["sparklet.io/spark-conf"])
			if err != nil {
				t.Fatalf("%s: %v", g, err)
			}
			changed, err := Parse(effective)
			if err != nil {
				t.Fatalf("%s: %v", g, err)
			}
			maps.Copy(conf, changed)
			fixtures = append(fixtures, conf)
		}
	}
	return fixtures
}

// TestRenderLoadRoundTrip: what Render writes, Properties.load
// reads back as the same configuration.
func TestRenderLoadRoundTrip(t *testing.T) {
	for _, conf := range confFixtures(t) {
		text := Render(conf)
		if got := load(t, text); !maps.Equal(got, conf) {
			t.Errorf("load(render(%q)) = %q; rendered:\n%s", conf, got, text)
		}
	}
}

// TestRenderAgainstJava loads what Render writes, random texts,
// and random user texts followed by an effective conf as DeliveredConf
// joins them, with java.util.Properties.load itself and compares with
// loadProperties. It needs a JDK.
func TestRenderAgainstJava(t *testing.T) {
	if testing.Short() {
		t.Skip("runs javac and java")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("no javac on PATH")
	}
	dir := t.TempDir()
	if out, err := exec.Command("javac", "-d", dir, "testdata/PropertiesLoad.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	texts := map[string]string{}
	add := func(text string) {
		f := filepath.Join(dir, fmt.Sprint(len(texts)))
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		texts[f] = text
	}
	for _, conf := range confFixtures(t) {
		add(Render(conf))
	}
	pieces := []string{"a", " ", "\t", "\f", "\n", "\r", "\r\n", `\`, `\\`, "=", ":", "#", "!", `\u0041`, `\u00`, `\n`, "é", "😀", "\\\n", "\\\r\n"}
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for range rnd.Intn(12) {
			b.WriteString(pieces[rnd.Intn(len(pieces))])
		}
		add(b.String())
		var r strings.Builder
		writeProperty(&r, b.String(), b.String())
		add(r.String())
		// The pod's own conf, whatever it ends with, then the effective
		// conf, as the conf init container writes them (patches.DeliveredConf).
		add("# sparklet: annotation sparklet.io/spark-conf, as the pod sets it\nspark.u 1\n" + b.String() +
			"\n\n# sparklet: the effective configuration, which overrides the lines above\nspark.z 1\n")
	}
	files := slices.Sorted(maps.Keys(texts))
	out, err := exec.Command("java", append([]string{"-cp", dir, "PropertiesLoad"}, files...)...).Output()
	if err != nil {
		t.Fatalf("java: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(files) {
		t.Fatalf("java printed %d lines for %d files", len(lines), len(files))
	}
	for _, line := range lines {
		f, java, _ := strings.Cut(line, " ")
		if got := javaView(texts[f]); got != java {
			t.Errorf("%q: Properties.load gives %q, loadProperties %q", texts[f], java, got)
		}
	}
}

// javaView prints loadProperties' result as PropertiesLoad.java does.
func javaView(text string) string {
	props, err := loadProperties(text)
	if err != nil {
		return "ERR"
	}
	m := map[string]string{}
	for _, p := range props {
		m[p.key] = p.value
	}
	esc := func(s string) string {
		var b strings.Builder
		for _, u := range s {
			switch {
			case u > 0xffff:
				u -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+u>>10, 0xdc00+u&0x3ff)
			case u < 0x20 || u > 0x7e || u == '\\':
				fmt.Fprintf(&b, `\u%04x`, u)
			default:
				b.WriteRune(u)
			}
		}
		return b.String()
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(esc(k) + "=" + esc(m[k]) + ";")
	}
	return b.String()
}

func TestParseSparkConfRefuses(t *testing.T) {
	for text, want := range map[string]string{
		`spark.a=x\nspark.b=y`: `line 1: "spark.a" with "\n" in its value`,
		`spark.a\rb=x`:         `line 1: "spark.a\rb" with "\r" in its key`,
		`spark.a=\u0000`:       `with "\x00" in its value`,
		"spark.a=\\u12":        "line 1: malformed",
	} {
		if _, err := Parse(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): err = %v, want %q", text, err, want)
		}
	}
}

// FuzzSparkConfRoundTrip: for any key and value, Properties.load reads
// back what Render wrote.
func FuzzSparkConfRoundTrip(f *testing.F) {
	for _, conf := range confFixtures(f) {
		for k, v := range conf {
			f.Add(k, v)
		}
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return // refused before rendering (UnsafeText)
		}
		conf := map[string]string{k: v, "spark.z": v}
		if got := load(t, Render(conf)); !maps.Equal(got, conf) {
			t.Errorf("load(render(%q)) = %q", conf, got)
		}
	})
}

// FuzzParseSparkConf: any annotation text is parsed or refused without a
// panic, and what is accepted survives rendering and parsing again.
func FuzzParse(f *testing.F) {
	for _, conf := range confFixtures(f) {
		f.Add(Render(conf))
	}
	f.Add("spark.a 1\n# c\nspark.b=\\\n  2\r\nspark.c:\\u0041")
	f.Fuzz(func(t *testing.T, text string) {
		conf, err := Parse(text)
		if err != nil {
			return
		}
		again, err := Parse(Render(conf))
		if err != nil || !maps.Equal(again, conf) {
			t.Errorf("parse(render(parse(%q))) = %q, %v; want %q", text, again, err, conf)
		}
	})
}
