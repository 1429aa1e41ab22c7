package patches

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ParseSparkConf reads spark-defaults.conf text as Spark does, with the
// grammar of java.util.Properties.load (see loadProperties): "key value",
// "key=value" or "key: value", escapes, continuation lines, comments
// starting with # or !. No key or value may hold a line break or NUL
// (written escaped, they would still be one in the conf). A later line
// wins. Keys that do not start with "spark." (hive.*, Hadoop's) are read
// like the others: spark-submit ignores them (ignoreNonSparkProperties),
// but they are the user's, so they are carried and read back. Errors name
// the line.
func ParseSparkConf(text string) (map[string]string, error) {
	props, err := loadProperties(text)
	if err != nil {
		return nil, err
	}
	conf := map[string]string{}
	for _, p := range props {
		if why := unsafeText(p.key, p.value); why != "" {
			return nil, fmt.Errorf("line %d: %q %s; a Spark property is one line, so remove it", p.line, p.key, why)
		}
		conf[p.key] = p.value
	}
	return conf, nil
}

// RenderSparkConf writes conf in spark-defaults.conf format, one
// "key value" line per property sorted by key, escaped so that
// Properties.load reads back exactly conf (see writeProperty).
func RenderSparkConf(conf map[string]string) string {
	var b strings.Builder
	size := 0
	for k, v := range conf {
		size += len(k) + len(v) + 2
	}
	b.Grow(size)
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		writeProperty(&b, k, conf[k])
	}
	return b.String()
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
