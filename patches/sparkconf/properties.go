package sparkconf

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
)

// Spark reads spark-defaults.conf with java.util.Properties.load(Reader)
// over UTF-8 (Utils.getPropertiesFromFile, Spark 3.5.x and 4.x), then trims
// each value. loadProperties and writeProperty follow the grammar of
// Properties.load as OpenJDK 17 implements it (Properties.LineReader,
// load0 and loadConvert), so what sparklet writes is what Spark reads.

// Load reads text as Properties.load does, the last line of a key
// winning, without Parse's refusals: what the JVM holds after reading it.
func Load(text string) (map[string]string, error) { return read(text, false) }

// property is one key and value of a properties text, with the line its
// logical line starts on.
type property struct {
	key, value string
	line       int
}

// loadProperties parses text as Properties.load does. Lines end at \n, \r
// or \r\n. Leading blanks (space, tab, form feed) of a line are skipped;
// a line that is then empty, or starts with # or !, is skipped. A line
// ending in an odd number of backslashes continues on the next one, whose
// leading blanks are skipped; at the end of the text such a backslash is
// dropped. A logical line that is empty so far when it continues starts
// afresh on the next line (LineReader tests len == 0, so # and ! start a
// comment there too). The key ends at the first unescaped =, : or blank; blanks and
// then one = or : and more blanks separate it from the value. In key and
// value, \uXXXX is a UTF-16 code unit, \t \n \r \f are those characters,
// and a backslash before any other character stands for that character.
func loadProperties(text string) ([]property, error) {
	var out []property
	rs := []rune(text)
	line := 1
	var buf []rune // the logical line, reused: splitProperty copies out of it
	for i := 0; i < len(rs); {
		// Skip blanks and blank lines before a logical line.
		for i < len(rs) && (isBlank(rs[i]) || rs[i] == '\n' || rs[i] == '\r') {
			if rs[i] == '\n' || (rs[i] == '\r' && (i+1 >= len(rs) || rs[i+1] != '\n')) {
				line++
			}
			i++
		}
		if i >= len(rs) {
			break
		}
		start := line
		if rs[i] == '#' || rs[i] == '!' {
			for i < len(rs) && rs[i] != '\n' && rs[i] != '\r' {
				i++
			}
			continue
		}
		buf = buf[:0]
		backslash := false
		for i < len(rs) {
			c := rs[i]
			if c != '\n' && c != '\r' {
				buf = append(buf, c)
				backslash = c == '\\' && !backslash
				i++
				continue
			}
			// The end of a natural line. Java sees the end of the text
			// when the terminator's first character is the last one.
			last := i+1 >= len(rs)
			i = skipEOL(rs, i)
			line++
			if !backslash || last {
				break
			}
			buf, backslash = buf[:len(buf)-1], false
			if len(buf) == 0 {
				break // nothing yet: the next line starts afresh
			}
			for i < len(rs) && isBlank(rs[i]) {
				i++
			}
		}
		if backslash { // a backslash at the end of the text: dropped
			buf = buf[:len(buf)-1]
		} else if len(buf) == 0 {
			continue
		}
		p, err := splitProperty(buf)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", start, err)
		}
		p.line = start
		out = append(out, p)
	}
	return out, nil
}

func isBlank(r rune) bool { return r == ' ' || r == '\t' || r == '\f' }

// skipEOL returns the index after the line terminator at i.
func skipEOL(rs []rune, i int) int {
	if rs[i] == '\r' && i+1 < len(rs) && rs[i+1] == '\n' {
		return i + 2
	}
	return i + 1
}

// splitProperty splits a logical line into key and value, as load0 does.
func splitProperty(l []rune) (property, error) {
	keyLen, valueStart, hasSep, backslash := 0, len(l), false, false
	for ; keyLen < len(l); keyLen++ {
		c := l[keyLen]
		if (c == '=' || c == ':') && !backslash {
			valueStart, hasSep = keyLen+1, true
			break
		}
		if isBlank(c) && !backslash {
			valueStart = keyLen + 1
			break
		}
		backslash = c == '\\' && !backslash
	}
	for ; valueStart < len(l); valueStart++ {
		c := l[valueStart]
		if !isBlank(c) {
			if !hasSep && (c == '=' || c == ':') {
				hasSep = true
			} else {
				break
			}
		}
	}
	key, err := unescape(l[:keyLen])
	if err != nil {
		return property{}, err
	}
	value, err := unescape(l[valueStart:])
	if err != nil {
		return property{}, err
	}
	return property{key: key, value: value}, nil
}

// unescape decodes escapes as loadConvert does, in UTF-16 code units as
// Java's chars are.
func unescape(s []rune) (string, error) {
	if !slices.Contains(s, '\\') {
		// Runes from a Go string hold no surrogate halves, so the trip
		// through UTF-16 below would give s back.
		return string(s), nil
	}
	var units []uint16
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			units = utf16.AppendRune(units, c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'u':
			if i+4 >= len(s) {
				return "", fmt.Errorf(`malformed \uXXXX escape: it needs four hex digits`)
			}
			var v uint16
			for _, h := range s[i+1 : i+5] {
				d := strings.IndexRune("0123456789abcdef", toLower(h))
				if d < 0 {
					return "", fmt.Errorf(`malformed \uXXXX escape %q: it needs four hex digits`, string(s[i-1:i+5]))
				}
				v = v<<4 | uint16(d)
			}
			units = append(units, v)
			i += 4
		case 't':
			units = append(units, '\t')
		case 'r':
			units = append(units, '\r')
		case 'n':
			units = append(units, '\n')
		case 'f':
			units = append(units, '\f')
		default:
			units = utf16.AppendRune(units, c)
		}
	}
	return string(utf16.Decode(units)), nil
}

// plain reports whether escape writes s as it is: printable ASCII, no
// backslash, no blank, = or : in a key, and no character that escapes only
// at the start there.
func plain(s string, isKey bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c >= 0x7f || c == '\\':
			return false
		case (isKey || i == 0) && (c == ' ' || c == '=' || c == ':'):
			return false
		case isKey && i == 0 && (c == '#' || c == '!'):
			return false
		}
	}
	return true
}

func toLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// writeProperty writes one "key value" line that loadProperties, and so
// Properties.load, reads back as key and value: backslashes and control
// characters are escaped everywhere (\t \n \r \f, else \uXXXX); in the
// key also blanks, = and :, and a leading # or !; in the value a leading
// blank, = or :. Other characters are written as they are, in UTF-8. An
// empty key is followed by "=" instead of a blank.
func writeProperty(b *strings.Builder, key, value string) {
	escape(b, key, true)
	if key == "" {
		b.WriteByte('=') // a blank would be skipped, and the value read as the key
	} else {
		b.WriteByte(' ')
	}
	escape(b, value, false)
	b.WriteByte('\n')
}

func escape(b *strings.Builder, s string, isKey bool) {
	if plain(s, isKey) {
		b.WriteString(s)
		return
	}
	for i, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\f':
			b.WriteString(`\f`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(b, `\u%04x`, c)
		case isKey && (c == ' ' || c == '=' || c == ':'):
			b.WriteByte('\\')
			b.WriteRune(c)
		case i == 0 && isKey && (c == '#' || c == '!'):
			b.WriteByte('\\')
			b.WriteRune(c)
		case i == 0 && !isKey && (c == ' ' || c == '=' || c == ':'):
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
}
