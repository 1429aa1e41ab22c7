package submitargs

import (
	"strings"
)

// shells are the programs whose -c script is read as a command line.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "ksh": true, "zsh": true}

// shellScript finds the -c script among a shell's arguments: options come
// first ("-c", "-lc", "-ec", "-o pipefail", "--login"...), and with c among
// them the first operand is the script. ok is false when there is no -c.
func shellScript(args []string) (script string, ok bool) {
	hasC := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if hasC && i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		case a == "-o" || a == "+o" || a == "-O" || a == "+O":
			i++ // takes an option name
		case strings.HasPrefix(a, "--"):
			// a long option such as --login or --noprofile
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			if strings.ContainsRune(a[1:], 'c') {
				hasC = true
			}
		default:
			return a, hasC
		}
	}
	return "", false
}

// interactiveShell tells whether a shell's options, before its first
// operand, make it interactive: -i, alone or among others (-ic).
func interactiveShell(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return false
		case a == "-o" || a == "+o" || a == "-O" || a == "+O":
			i++
		case a == "--interactive":
			return true
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a[1:], 'i'):
			return true
		case len(a) == 0 || a[0] != '-' && a[0] != '+':
			return false
		}
	}
	return false
}

// compound are the words that start something other than a simple command.
var compound = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true, "while": true, "until": true,
	"do": true, "done": true, "case": true, "esac": true, "function": true, "select": true, "!": true,
	"{": true, "}": true, "[[": true, "]]": true, "time": true, "coproc": true,
}

// SplitShell splits a shell script into the words of one simple command as
// a POSIX shell would (Shell Command Language, 2.2 Quoting and 2.3 Token
// Recognition): blanks separate words; '...' is literal; "..." is literal
// but for \ before $ ` " \ and newline; a backslash outside quotes quotes
// the next character, and a backslash-newline joins lines; # starts a
// comment. Anything that would make the shell expand, redirect, run more
// than one command or fail (unquoted $ ` ; & | < > ( ) * ? [ { ~, an
// unterminated quote, a keyword) is not a simple command: why then says
// what was found, and words is nil.
func SplitShell(script string) (words []string, why string) {
	var cur strings.Builder
	inWord, ended := false, false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(script); i++ {
		ch := script[i]
		if ended && ch != ' ' && ch != '\t' && ch != '\n' {
			if ch == '#' {
				i = skipComment(script, i)
				continue
			}
			return nil, "it has more than one command"
		}
		switch ch {
		case ' ', '\t':
			flush()
		case '\n':
			flush()
			ended = len(words) > 0
		case '\\':
			if i+1 >= len(script) {
				return nil, "it ends with a backslash"
			}
			i++
			if script[i] != '\n' {
				cur.WriteByte(script[i])
				inWord = true
			}
		case '\'':
			end := strings.IndexByte(script[i+1:], '\'')
			if end < 0 {
				return nil, "a single quote is not closed"
			}
			cur.WriteString(script[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case '"':
			n, why := doubleQuoted(script[i+1:], &cur)
			if why != "" {
				return nil, why
			}
			inWord = true
			i += n
		case '#':
			if inWord {
				cur.WriteByte(ch)
				continue
			}
			i = skipComment(script, i)
		case '$', '`':
			return nil, "it expands " + string(ch)
		case ';', '&', '|', '<', '>', '(', ')':
			return nil, "it uses " + string(ch)
		case '*', '?', '[', '{', '}':
			return nil, "it has the pattern or brace character " + string(ch)
		case '~':
			if !inWord {
				return nil, "it expands ~"
			}
			cur.WriteByte(ch)
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	flush()
	if len(words) > 0 && compound[words[0]] {
		return nil, "it starts with " + words[0]
	}
	return words, ""
}

// doubleQuoted reads the inside of "..." from s, which starts after the
// opening quote, into cur and returns how many bytes it used, the closing
// quote included.
func doubleQuoted(s string, cur *strings.Builder) (int, string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			return i + 1, ""
		case '$', '`':
			return 0, "it expands " + string(s[i]) + " inside double quotes"
		case '\\':
			if i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
				i++
				if s[i] != '\n' {
					cur.WriteByte(s[i])
				}
				continue
			}
			cur.WriteByte('\\')
		default:
			cur.WriteByte(s[i])
		}
	}
	return 0, "a double quote is not closed"
}

// skipComment returns the index of the newline that ends the comment at i,
// or the end of s.
func skipComment(s string, i int) int {
	if n := strings.IndexByte(s[i:], '\n'); n >= 0 {
		return i + n - 1 // the loop's i++ lands on the newline
	}
	return len(s)
}
