package spec

import (
	"errors"
	"net/url"
	"strings"
)

// maxDecodings is how many rounds of percent-decoding a URL's path is
// judged after: a server or proxy in front of it may decode twice
// (%252e%252e is %2e%2e, then ..).
const maxDecodings = 3

// checkPath refuses a URL path that could name another place than it
// reads as once a server decodes it: . and .. segments, plain,
// percent-encoded (%2e%2e, %2E., %252e%252e) or with ;parameters (Tomcat
// reads ..;x as ..); encoded slashes (%2F), which some servers decode into
// separators; and backslashes (\ or %5C), which some read as separators.
// escaped is the path as sent on the wire (url.URL.EscapedPath).
func checkPath(escaped string) error {
	p := escaped
	for range maxDecodings + 1 {
		lower := strings.ToLower(p)
		switch {
		case strings.Contains(lower, `\`) || strings.Contains(lower, "%5c"):
			return errors.New(`must not contain a backslash (\ or %5C), which some servers read as a path separator; write the path with /`)
		case strings.Contains(lower, "%2f"):
			return errors.New("must not contain an encoded slash (%2F), which some servers decode into a path separator; write the path with /")
		}
		for _, seg := range strings.Split(p, "/") {
			seg, _, _ = strings.Cut(seg, ";")
			if seg == "." || seg == ".." {
				return errors.New("must not contain . or .. path segments, also not percent-encoded (%2e) or with ;parameters; write the path out")
			}
		}
		next, err := url.PathUnescape(p)
		if err != nil || next == p {
			return nil
		}
		p = next
	}
	return nil
}

// judged is the form of a URL that allowed prefixes are compared with:
// scheme and host in lower case, as they are matched, and the path
// decoded, as the server reads it.
func judged(u *url.URL) string {
	s := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + u.Path
	if u.RawQuery != "" || u.ForceQuery {
		s += "?" + u.RawQuery
	}
	return s
}
