package patches

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ParseSparkConf reads spark-defaults.conf text: one property per line as
// "key value" or "key=value"; blank lines and lines starting with # or !
// are ignored. Errors name the line.
func ParseSparkConf(text string) (map[string]string, error) {
	conf := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		sep := strings.IndexAny(line, "= \t:")
		if sep <= 0 {
			return nil, fmt.Errorf("line %d %q: expected \"key value\" or \"key=value\"", i+1, line)
		}
		key := line[:sep]
		value := strings.TrimSpace(line[sep+1:])
		value = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(value, "="), ":"))
		if !strings.HasPrefix(key, "spark.") {
			return nil, fmt.Errorf("line %d: %q is not a Spark property (they start with \"spark.\")", i+1, key)
		}
		conf[key] = value
	}
	return conf, nil
}

// RenderSparkConf writes conf in spark-defaults.conf format, sorted by key.
// Backslashes are escaped because Spark loads the file with
// java.util.Properties.load.
func RenderSparkConf(conf map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		b.WriteString(k)
		b.WriteByte(' ')
		b.WriteString(strings.ReplaceAll(conf[k], `\`, `\\`))
		b.WriteByte('\n')
	}
	return b.String()
}

// submitArgs is what the container's command line tells spark-submit.
type submitArgs struct {
	conf           map[string]string // --conf / -c key=value, the last one wins
	master         string            // --master
	propertiesFile string            // --properties-file
}

// parseSubmitArgs scans a container's command and args the way
// SparkSubmitArguments does for the options sparklet cares about
// (core/src/main/scala/org/apache/spark/deploy/SparkSubmitArguments.scala).
func parseSubmitArgs(words []string) (submitArgs, error) {
	out := submitArgs{conf: map[string]string{}}
	for i := 0; i < len(words); i++ {
		w := words[i]
		name, value, inline := strings.Cut(w, "=")
		switch name {
		case "--conf", "-c", "--master", "--properties-file":
		default:
			continue
		}
		if !inline {
			if i+1 >= len(words) {
				return out, fmt.Errorf("%s at the end of the command has no value", name)
			}
			i++
			value = words[i]
		}
		switch name {
		case "--conf", "-c":
			k, v, ok := strings.Cut(value, "=")
			if !ok || k == "" {
				return out, fmt.Errorf("%s %q: expected key=value", name, value)
			}
			out.conf[k] = v
		case "--master":
			out.master = value
		case "--properties-file":
			out.propertiesFile = value
		}
	}
	return out, nil
}

// javaMiB parses a JVM memory string as Spark's JavaUtils.byteStringAsMb
// does: a number with an optional b, k, m, g, t or p suffix (kb, mb ... too);
// a bare number means MiB.
func javaMiB(s string) (int64, error) {
	b, err := javaBytes(s, 1<<20)
	return b >> 20, err
}

// javaBytes parses a JVM memory string as JavaUtils.byteStringAs does; a
// bare number counts in units of bare bytes.
func javaBytes(s string, bare int64) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		bytes  int64
	}{{"pb", 1 << 50}, {"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"p", 1 << 50}, {"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1}}
	mult := bare
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.bytes
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a JVM memory size such as 4g or 512m", s)
	}
	return n * mult, nil
}
