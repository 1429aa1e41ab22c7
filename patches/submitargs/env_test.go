package submitargs

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitJVMOptions(t *testing.T) {
	for in, want := range map[string][]string{
		"":                         nil,
		"  -Xss4m\t-Da=b \n":       {"-Xss4m", "-Da=b"},
		`-Da='x y' "-Db=1 2"`:      {"-Da=x y", "-Db=1 2"},
		`-Da="it's" -Db='say "x"'`: {"-Da=it's", `-Db=say "x"`},
		`-Da=\'x`:                  nil, // no escapes: the quote opens and is not closed
		`-Da=""`:                   {"-Da="},
	} {
		got, err := SplitJVMOptions(in)
		if want == nil && strings.Contains(in, `\'`) {
			if err == nil {
				t.Errorf("SplitJVMOptions(%q) = %q, want an error", in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitJVMOptions(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestSplitOptions: cases worked out from the launcher's parseOptionString
// (launcher 3.5.9).
func TestSplitOptions(t *testing.T) {
	for in, want := range map[string][]string{
		"a b c d e":               {"a", "b", "c", "d", "e"},
		`"abc" "d e" "f" "g h i"`: {"abc", "d e", "f", "g h i"},
		`'a b' "c d"`:             {"a b", "c d"},
		`\"abc\" \"d e\"`:         {`"abc"`, `"d`, `e"`},
		`"a"b"c"`:                 {"abc"},
		`""`:                      {""},
		`'a\b'`:                   {`a\b`},
		`"a\"b"`:                  {`a"b`},
		"a\u00a0b":                {"a\u00a0b"}, // not Java white space
		"a\u2003b\u001fc":         {"a", "b", "c"},
	} {
		got, err := SplitOptions(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitOptions(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`"abcd`, `'abcd`, `"abcd\`, `abcd\`} {
		if got, err := SplitOptions(in); err == nil {
			t.Errorf("SplitOptions(%q) = %q, want an error", in, got)
		}
	}
}

func TestSystemProperties(t *testing.T) {
	got := SystemProperties([]string{"-Xmx1g", "-Dspark.a=1=2", "-Dfoo=bar", "-Dspark.b", "-D", "spark.c=3"})
	want := []Setting{{"spark.a", "1=2", "-D"}, {"spark.b", "", "-D"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SystemProperties = %v, want %v", got, want)
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "x", "B": "$(A)"}
	lookup := func(name string) (string, bool, bool) {
		if name == "SECRET" {
			return "", true, false
		}
		v, ok := env[name]
		return v, ok, ok
	}
	for in, want := range map[string]string{
		"$(A)-$(B)":      "x-$(A)", // no second pass
		"$$(A) $$ $":     "$(A) $ $",
		"$(C) $(A":       "$(C) $(A",
		"$(a$$":          "$(a$",
		"$x$(A)":         "$xx",
		"pre$(SECRET)fx": "pre$(SECRET)fx",
	} {
		got, unknown := Expand(in, lookup)
		if got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(in, "SECRET") != (len(unknown) == 1) {
			t.Errorf("Expand(%q): unknown = %q", in, unknown)
		}
	}
}

func TestPySparkSubmitArgs(t *testing.T) {
	s, ok, err := PySparkSubmitArgs(`--master local --conf "spark.a=b c" pyspark-shell`)
	if err != nil || !ok || s.Resource != "pyspark-shell" {
		t.Fatalf("= %+v, %v, %v", s, ok, err)
	}
	if v, _ := s.Last("--conf"); v != "spark.a=b c" {
		t.Errorf("--conf = %q", v)
	}
	if _, ok, _ := PySparkSubmitArgs(`--conf "spark.a=\x" pyspark-shell`); ok {
		t.Error("a backslash, which shlex.split and the launcher read differently, was read")
	}
}

func TestInteractiveShell(t *testing.T) {
	for cmd, want := range map[string]bool{
		"bash\x00-ic\x00spark-submit x.py":           true,
		"sh\x00-i\x00-c\x00spark-submit x.py":        true,
		"bash\x00-c\x00spark-submit x.py -i":         false,
		"bash\x00-o\x00ignoreeof\x00-c\x00spark-sql": false,
	} {
		words := strings.Split(cmd, "\x00")
		c, err := Read(words, nil)
		if err != nil || c.Interactive != want {
			t.Errorf("Read(%q).Interactive = %v (%v), want %v", words, c.Interactive, err, want)
		}
	}
}
