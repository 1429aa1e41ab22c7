package submitargs

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzRead reads arbitrary command lines (words separated by NUL): it never
// panics, and what it reads is consistent: the primary resource is not an
// option, and with it, the application's arguments are exactly the words
// after it.
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		"\x00driver\x00--conf\x00spark.a=1\x00app.jar\x00--conf\x00x",
		"/opt/spark/bin/spark-submit\x00--num-executors=3\x00--deploy-mode\x00cluster\x00x.py",
		"bash\x00-lc\x00exec spark-submit --conf 'spark.a=1 2' \"x.py\" --v",
		"sh\x00-c\x00cd /x && spark-submit x.py",
		"pyspark\x00--conf\x00spark.a=1\x00-i",
		"spark-sql\x00-e\x00select 1\x00--class\x00org.apache.spark.repl.Main",
		"tini\x00--\x00/opt/entrypoint.sh\x00driver\x00--master",
		"env\x00A=1\x00python3\x00app.py",
		"sh\x00-c\x00sh -c \"sh -c 'spark-submit -c a=b x.py'\"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		command, args, _ := strings.Cut(line, "\x00")
		var cmd []string
		if command != "" {
			cmd = []string{command}
		}
		var words []string
		if args != "" {
			words = strings.Split(args, "\x00")
		}
		c, err := Read(cmd, words)
		if err != nil {
			return
		}
		if strings.HasPrefix(c.Submit.Resource, "-") {
			t.Errorf("the primary resource %q is an option", c.Submit.Resource)
		}
		for _, o := range c.Submit.Options {
			if _, ok := lookup(withValue, o.Name); !ok {
				if _, ok := lookup(switches, o.Name); !ok {
					t.Errorf("option %q is not in the table", o.Name)
				}
			}
		}
		if _, err := c.Submit.Conf(); err != nil && !strings.Contains(err.Error(), "expected key=value") {
			t.Errorf("Conf: %v", err)
		}
	})
}

// FuzzParseSubmit: after a primary resource found in normal mode, the
// application's arguments are exactly the words after it, never options.
func FuzzParseSubmit(f *testing.F) {
	f.Add("--class\x00Main\x00-c\x00spark.a=1\x00app.jar\x00--conf\x00x")
	f.Add("--conf=spark.a=b\x00--verbose=1\x00x.py\x00-v")
	f.Fuzz(func(t *testing.T, line string) {
		words := strings.Split(line, "\x00")
		if len(words) > 0 && mixedResources[words[0]] {
			return
		}
		s, err := ParseSubmit(words)
		if err != nil || s.Resource == "" {
			return
		}
		for _, o := range s.Options {
			if o.Name == "--class" && mixedClasses[o.Value] {
				return
			}
		}
		i := len(words) - len(s.AppArgs) - 1
		if i < 0 || words[i] != s.Resource || !reflect.DeepEqual(append([]string{}, words[i+1:]...), append([]string{}, s.AppArgs...)) {
			t.Errorf("ParseSubmit(%q): resource %q, app args %q are not the tail of the words", words, s.Resource, s.AppArgs)
		}
	})
}

// FuzzSplitShell: a script is split or refused without a panic, and the
// words of a simple command, quoted again, split into the same words.
func FuzzSplitShell(f *testing.F) {
	for _, s := range []string{`a 'b c' "d\"e" f\ g # x`, "a \\\n b", `a "$x"`, "a\nb", `it's`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		words, why := SplitShell(script)
		if why != "" {
			if words != nil {
				t.Errorf("SplitShell(%q) refused (%s) but returned words", script, why)
			}
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, why := SplitShell(strings.Join(quoted, " "))
		if why != "" || !reflect.DeepEqual(again, words) && !(len(again) == 0 && len(words) == 0) {
			t.Errorf("SplitShell(%q) = %q; quoted again it gives %q (%s)", script, words, again, why)
		}
	})
}

// FuzzSplitEnvOptions: the option strings of the env routes
// (SPARK_SUBMIT_OPTS, JAVA_TOOL_OPTIONS, PYSPARK_SUBMIT_ARGS) split without
// a panic, and the options, quoted again, split into the same options.
func FuzzSplitEnvOptions(f *testing.F) {
	for _, s := range []string{`-Da='x y' "-Db=1 2" -Xss4m`, `\"a\" 'b\c' "d\"e"`, "-Dspark.a=1\u00a0-Db", `"unclosed`, `''`, "--conf spark.a=b pyspark-shell"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if opts, err := SplitOptions(s); err == nil {
			quoted := make([]string, len(opts))
			for i, o := range opts {
				quoted[i] = "'" + strings.ReplaceAll(o, "'", `'\''`) + "'"
			}
			again, err := SplitOptions(strings.Join(quoted, " "))
			if err != nil || !reflect.DeepEqual(again, opts) && len(opts) > 0 {
				t.Errorf("SplitOptions(%q) = %q; quoted again %q (%v)", s, opts, again, err)
			}
		}
		if opts, err := SplitJVMOptions(s); err == nil {
			quoted := make([]string, 0, len(opts))
			for _, o := range opts {
				q := "'"
				if strings.Contains(o, "'") {
					q = `"`
				}
				if strings.Contains(o, q) {
					return // holds both quotes: not writable as one option
				}
				quoted = append(quoted, q+o+q)
			}
			again, err := SplitJVMOptions(strings.Join(quoted, " "))
			if err != nil || !reflect.DeepEqual(again, opts) && len(opts) > 0 {
				t.Errorf("SplitJVMOptions(%q) = %q; quoted again %q (%v)", s, opts, again, err)
			}
			for _, p := range SystemProperties(opts) {
				if !strings.HasPrefix(p.Key, "spark.") || strings.Contains(p.Key, "=") {
					t.Errorf("SystemProperties(%q): key %q", opts, p.Key)
				}
			}
		}
	})
}

// FuzzExpand: the kubelet's $(VAR) expansion never panics, leaves a string
// without $ alone, reports as unknown only names written as $(NAME) in the
// input, and expands a reference to a known name after any text.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"$(A)-$(B)", "$$(A) $$ $", "$(a$$", "$(SECRET)x", "$($(A))", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lookup := func(name string) (string, bool, bool) {
			switch name {
			case "A":
				return "[a]", true, true
			case "SECRET":
				return "", true, false
			}
			return "", false, false
		}
		out, unknown := Expand(s, lookup)
		if !strings.Contains(s, "$") && out != s {
			t.Errorf("Expand(%q) = %q, want it unchanged", s, out)
		}
		for _, n := range unknown {
			if !strings.Contains(s, "$("+n+")") {
				t.Errorf("Expand(%q): unknown %q is not referred to", s, n)
			}
		}
		// After a ")" that closes any reference s leaves open, a
		// reference to A becomes its value.
		if got, _ := Expand(s+") $(A)", lookup); !strings.HasSuffix(got, " [a]") {
			t.Errorf("Expand(%q) = %q, want it to end in the value of $(A)", s+") $(A)", got)
		}
	})
}
