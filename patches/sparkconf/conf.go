package sparkconf

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Parse reads spark-defaults.conf text as Spark does, with the
// grammar of java.util.Properties.load (see loadProperties): "key value",
// "key=value" or "key: value", escapes, continuation lines, comments
// starting with # or !. No key or value may hold a line break or NUL
// (written escaped, they would still be one in the conf). A later line
// wins. Keys that do not start with "spark." (hive.*, Hadoop's) are read
// like the others: spark-submit ignores them (ignoreNonSparkProperties),
// but they are the user's, so they are carried and read back. Errors name
// the line.
func Parse(text string) (map[string]string, error) { return read(text, true) }

// read is Parse with refuse, else Load.
func read(text string, refuse bool) (map[string]string, error) {
	props, err := loadProperties(text)
	if err != nil {
		return nil, err
	}
	conf := map[string]string{}
	for _, p := range props {
		if why := UnsafeText(p.key, p.value); refuse && why != "" {
			return nil, fmt.Errorf("line %d: %q %s; a Spark property is one line, so remove it", p.line, p.key, why)
		}
		conf[p.key] = p.value
	}
	return conf, nil
}

// Render writes conf in spark-defaults.conf format, one
// "key value" line per property sorted by key, escaped so that
// Properties.load reads back exactly conf (see writeProperty).
func Render(conf map[string]string) string {
	var b strings.Builder
	size := 0
	for k, v := range conf {
		size += len(k) + len(v) + 2
	}
	b.Grow(size)
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		writeProperty(&b, k, conf[k])
	}
	return b.String()
}

// UnsafeText says what makes a Spark property unsafe to write: a line
// break or NUL in its key or value (a second line would be a property of
// its own), or text that is not UTF-8 (Spark reads the file as UTF-8).
// It returns "" when there is nothing.
func UnsafeText(k, v string) string {
	for _, f := range []struct{ name, text string }{{"key", k}, {"value", v}} {
		if i := strings.IndexAny(f.text, "\r\n\x00"); i >= 0 {
			return fmt.Sprintf("with %q in its %s", f.text[i:i+1], f.name)
		}
		if !utf8.ValidString(f.text) {
			return "with text that is not UTF-8 in its " + f.name
		}
	}
	return ""
}
