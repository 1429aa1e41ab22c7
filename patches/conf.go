package patches

import (
	"fmt"
	"maps"
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

// javaMiB parses a JVM memory string as Spark's JavaUtils.byteStringAsMb
// does: a number with an optional b, k, m, g, t or p suffix (kb, mb ... too);
// a bare number means MiB.
func javaMiB(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		kib    float64
	}{{"pb", 1 << 40}, {"tb", 1 << 30}, {"gb", 1 << 20}, {"mb", 1 << 10}, {"kb", 1}, {"p", 1 << 40}, {"t", 1 << 30}, {"g", 1 << 20}, {"m", 1 << 10}, {"k", 1}, {"b", 1.0 / 1024}}
	mult := float64(1 << 10) // bare number: MiB
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.kib
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a JVM memory size such as 4g or 512m", s)
	}
	return int64(float64(n) * mult / 1024), nil
}
