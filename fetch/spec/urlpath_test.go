package spec

import (
	"net/url"
	"path"
	"strings"
	"testing"
)

// teamA allows only team-a's directory of one repository.
var teamA = Policy{AllowedURLPrefixes: []string{"https://repo.example.com/team-a/"}}

// TestAdversarialURLs: a URL that a server could read as outside the
// allowed prefix is refused, by the annotation's own check and by the
// policy alike, with the reason named.
func TestAdversarialURLs(t *testing.T) {
	const (
		dots      = "must not contain . or .. path segments, also not percent-encoded"
		slash     = "must not contain an encoded slash (%2F)"
		backslash = `must not contain a backslash (\ or %5C)`
	)
	for _, tc := range []struct{ url, want string }{
		{"https://repo.example.com/team-a/%2e%2e/team-b/x.jar", dots},
		{"https://repo.example.com/team-a/%2E./team-b/x.jar", dots},
		{"https://repo.example.com/team-a/.%2E/team-b/x.jar", dots},
		{"https://repo.example.com/team-a/%2e/x.jar", dots},
		{"https://repo.example.com/team-a/%252e%252e/team-b/x.jar", dots},
		{"https://repo.example.com/team-a/%25252e%25252e/team-b/x.jar", dots},
		{"https://repo.example.com/team-a/..;/team-b/x.jar", dots},
		{"https://repo.example.com/team-a/%2e%2e;x=1/team-b/x.jar", dots},
		{"https://repo.example.com/team-a/..%2fteam-b/x.jar", slash},
		{"https://repo.example.com/team-a%2F..%2Fteam-b/x.jar", slash},
		{"https://repo.example.com/team-a/%252f..%252fteam-b/x.jar", slash},
		{`https://repo.example.com/team-a/..\team-b\x.jar`, backslash},
		{"https://repo.example.com/team-a/..%5cteam-b/x.jar", backslash},
		{"https://repo.example.com/team-a/..%255Cteam-b/x.jar", backslash},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := ParseAnnotation(tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("annotation: got %v, want an error containing %q", err, tc.want)
			}
			err = teamA.Check([]Entry{{URL: tc.url, Dest: "x.jar"}})
			if err == nil || !strings.Contains(err.Error(), "fetch.allowedURLPrefixes") {
				t.Errorf("policy: got %v, want a refusal naming fetch.allowedURLPrefixes", err)
			}
		})
	}
}

// TestURLsJudgedDecoded: the prefix is compared with the URL as the
// server reads it, so an encoded spelling of an allowed path is allowed
// and an encoded spelling of another is not.
func TestURLsJudgedDecoded(t *testing.T) {
	for _, tc := range []struct {
		url   string
		allow bool
	}{
		{"https://repo.example.com/team-a/x.jar", true},
		{"https://REPO.example.com/team-a/x.jar", true},
		{"HTTPS://repo.example.com/team-a/x.jar", true},
		{"https://repo.example.com/team%2Da/x.jar", true},
		{"https://repo.example.com/team-a/lib%20x.jar", true},
		{"https://repo.example.com/team-ab/x.jar", false},
		{"https://repo.example.com/team-b/x.jar", false},
		{"https://repo.example.com/team-a", false},
		{"https://repo.example.com:8443/team-a/x.jar", false},
		{"https://repo.example.com.evil.net/team-a/x.jar", false},
	} {
		err := teamA.Check([]Entry{{URL: tc.url, Dest: "x.jar"}})
		if (err == nil) != tc.allow {
			t.Errorf("%s: allowed=%v, want %v (%v)", tc.url, err == nil, tc.allow, err)
		}
	}
}

func TestPrefixWithEncodedSegmentsRefused(t *testing.T) {
	for _, prefix := range []string{
		"https://repo.example.com/team-a/%2e%2e/",
		"https://repo.example.com/team-a%2f/",
		`https://repo.example.com/team-a\`,
	} {
		err := Policy{AllowedURLPrefixes: []string{prefix}}.Validate()
		if err == nil || !strings.Contains(err.Error(), "fetch.allowedURLPrefixes[0]") {
			t.Errorf("%s: got %v, want a refusal naming fetch.allowedURLPrefixes[0]", prefix, err)
		}
	}
}

// FuzzAllowedURLStaysInside: whatever URL the annotation accepts and the
// policy allows, a server that decodes its path up to three times, reads
// backslashes as slashes, drops ;parameters and resolves dot segments
// still finds it under the allowed prefix.
func FuzzAllowedURLStaysInside(f *testing.F) {
	f.Add("https://repo.example.com/team-a/x.jar")
	f.Add("https://repo.example.com/team-a/%2e%2e/team-b/x.jar")
	f.Add("https://repo.example.com/team-a/..%2fteam-b/x.jar")
	f.Add(`https://repo.example.com/team-a/..\team-b/x.jar`)
	f.Add("https://repo.example.com/team-a/%252e%252e/x.jar")
	f.Fuzz(func(t *testing.T, raw string) {
		entries, err := ParseAnnotation(raw)
		if err != nil || len(entries) != 1 || teamA.Check(entries) != nil {
			return
		}
		u, err := url.Parse(entries[0].URL)
		if err != nil {
			t.Fatalf("accepted %q, which does not parse: %v", raw, err)
		}
		p := u.EscapedPath()
		for range maxDecodings {
			if next, err := url.PathUnescape(p); err == nil {
				p = next
			}
		}
		p = strings.ReplaceAll(p, `\`, "/")
		segs := strings.Split(p, "/")
		for i := range segs {
			segs[i], _, _ = strings.Cut(segs[i], ";")
		}
		if resolved := path.Clean(strings.Join(segs, "/")); !strings.HasPrefix(resolved+"/", "/team-a/") {
			t.Fatalf("allowed %q, which a server may read as %s", raw, resolved)
		}
	})
}
