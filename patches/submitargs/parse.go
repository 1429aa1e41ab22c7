package submitargs

import (
	"fmt"
	"strings"
)

// Option is one spark-submit option as given: Name is the option's
// canonical name ("--conf" for -c), Value is empty for a switch.
type Option struct {
	Name  string
	Value string
}

// Submit is a spark-submit command line, read as spark-submit reads it.
type Submit struct {
	Options []Option
	// Resource is the primary resource (the application jar or Python
	// file), or empty when there is none (the shells).
	Resource string
	// AppArgs belong to the application: everything after the primary
	// resource, and the shells' own arguments. They are never options.
	AppArgs []string
}

// ParseSubmit reads spark-submit's arguments (without the program name) as
// SparkSubmitOptionParser.parse does: an option with a value takes the next
// word or the text after "=" (--name=value, whose value may not be empty
// or span lines: the pattern is "(--[^=]+)=(.+)"), a switch takes none,
// and the first other word is the primary resource, after which every word
// is the application's. An unknown word starting with "-" before it is an
// error, as in SparkSubmitCommandBuilder.OptionParser.handleUnknown. After
// --class naming a shell's main class, or the first word pyspark-shell-main
// or sparkr-shell-main, unknown words are the shell's and parsing goes on.
func ParseSubmit(args []string) (Submit, error) {
	var s Submit
	mixed := false
	if len(args) > 0 && mixedResources[args[0]] {
		s.Resource, args, mixed = args[0], args[1:], true
	}
	for i := 0; i < len(args); i++ {
		word, value, inline := splitInline(args[i])
		if name, ok := lookup(withValue, word); ok {
			if !inline {
				if i == len(args)-1 {
					return s, fmt.Errorf("%s has no value (it is the last argument)", args[i])
				}
				i++
				value = args[i]
			}
			s.Options = append(s.Options, Option{Name: name, Value: value})
			if name == "--class" && mixedClasses[value] {
				mixed = true
			}
			continue
		}
		if name, ok := lookup(switches, word); ok {
			s.Options = append(s.Options, Option{Name: name})
			continue
		}
		if mixed {
			s.AppArgs = append(s.AppArgs, args[i])
			continue
		}
		if strings.HasPrefix(args[i], "-") {
			return s, fmt.Errorf("%s is not a spark-submit option, and it comes before the application jar or Python file", args[i])
		}
		s.Resource, s.AppArgs = args[i], append([]string(nil), args[i+1:]...)
		break
	}
	return s, nil
}

// splitInline splits "--name=value" as the pattern (--[^=]+)=(.+) does
// under Matcher.matches: the name starts with "--" and has at least one
// more character, the value is not empty, and "." matches no Java line
// terminator.
func splitInline(w string) (name, value string, ok bool) {
	if !strings.HasPrefix(w, "--") {
		return w, "", false
	}
	eq := strings.IndexByte(w, '=')
	if eq < 3 || eq == len(w)-1 || strings.ContainsAny(w[eq+1:], "\n\r\u0085\u2028\u2029") {
		return w, "", false
	}
	return w[:eq], w[eq+1:], true
}

// Setting is a Spark property a command line sets, and the option that
// sets it ("--conf", or a shorthand such as "--num-executors").
type Setting struct {
	Key, Value, From string
}

// Conf is the Spark configuration the options set, in the order spark-submit
// applies them: every --conf in order (a later one wins), then the
// shorthands, which win over a --conf of the same key. A --conf value
// without "=" is an error, as in SparkSubmitUtils.parseSparkConfProperty.
func (s Submit) Conf() ([]Setting, error) {
	var confs, shorthands []Setting
	for _, o := range s.Options {
		if o.Name == "--conf" {
			k, v, ok := strings.Cut(o.Value, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--conf %q: expected key=value", o.Value)
			}
			confs = append(confs, Setting{Key: k, Value: v, From: "--conf"})
			continue
		}
		if key, ok := confKeys[o.Name]; ok {
			v := o.Value
			if o.Name == "--supervise" {
				v = "true"
			}
			shorthands = append(shorthands, Setting{Key: key, Value: v, From: o.Name})
		}
	}
	return append(confs, shorthands...), nil
}

// Last returns the value of the last option named name, and whether there
// is one.
func (s Submit) Last(name string) (string, bool) {
	for i := len(s.Options) - 1; i >= 0; i-- {
		if s.Options[i].Name == name {
			return s.Options[i].Value, true
		}
	}
	return "", false
}
