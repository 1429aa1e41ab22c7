package sparkconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MiB parses a JVM memory string as Spark's JavaUtils.byteStringAsMb
// does: a number with an optional b, k, m, g, t or p suffix (kb, mb ... too);
// a bare number means MiB.
func MiB(s string) (int64, error) {
	b, err := Bytes(s, 1<<20)
	return b >> 20, err
}

// Bytes parses a JVM memory string as JavaUtils.byteStringAs does; a
// bare number counts in units of bare bytes.
func Bytes(s string, bare int64) (int64, error) {
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
