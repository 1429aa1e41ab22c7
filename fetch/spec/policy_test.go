package spec

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Policy
		want string // "" when valid
	}{
		{"empty", Policy{}, ""},
		{"complete", Policy{AllowedURLPrefixes: []string{"https://repo.example.com/", "http://mirror.example.com/spark/libs-"}, RequireSHA256: ptr(true), MaxSize: "500Mi", Timeout: "90s"}, ""},
		{"prefix without the slash after the host", Policy{AllowedURLPrefixes: []string{"https://repo.example.com"}}, `fetch.allowedURLPrefixes[0]: "https://repo.example.com" must include the path after the host, at least "https://repo.example.com/"`},
		{"prefix with a query only", Policy{AllowedURLPrefixes: []string{"https://repo.example.com?x=1"}}, `must include the path after the host`},
		{"ftp prefix", Policy{AllowedURLPrefixes: []string{"https://ok/", "ftp://repo/"}}, `fetch.allowedURLPrefixes[1]: "ftp://repo/" must start with http:// or https://`},
		{"prefix with credentials", Policy{AllowedURLPrefixes: []string{"https://u:p@repo/"}}, `must name a host, without credentials`},
		{"size not a quantity", Policy{MaxSize: "2GG"}, `fetch.maxSize: "2GG" is not a quantity; write for example 500Mi or 2Gi`},
		{"size zero", Policy{MaxSize: "0"}, `fetch.maxSize: "0" must be at least one byte`},
		{"timeout without unit", Policy{Timeout: "10"}, `fetch.timeout: "10" is not a duration; write for example 90s or 10m`},
		{"negative timeout", Policy{Timeout: "-1s"}, `fetch.timeout: "-1s" must be positive`},
		{"every problem at once", Policy{MaxSize: "x", Timeout: "y"}, `fetch.maxSize: "x" is not a quantity; write for example 500Mi or 2Gi; fetch.timeout: "y"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("accepted, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestPolicyCheck(t *testing.T) {
	pinned := Entry{URL: "https://repo.example.com/libs/a.jar", SHA256: strings.Repeat("ab", 32), Dest: "a.jar"}
	unpinned := Entry{URL: "https://repo.example.com/libs/b.jar", Dest: "b.jar"}
	elsewhere := Entry{URL: "https://evil.example.net/c.jar", SHA256: strings.Repeat("cd", 32), Dest: "c.jar"}
	lookalike := Entry{URL: "https://repo.example.com.evil.net/d.jar", SHA256: strings.Repeat("ef", 32), Dest: "d.jar"}
	allowList := []string{"https://repo.example.com/", "https://maven.example.com/releases/"}
	for _, tc := range []struct {
		name    string
		p       Policy
		entries []Entry
		want    []string // substrings; none when allowed
	}{
		{"no policy allows any URL", Policy{}, []Entry{unpinned, elsewhere}, nil},
		{"requireSHA256 false allows unpinned", Policy{RequireSHA256: ptr(false)}, []Entry{unpinned}, nil},
		{"on the allow-list", Policy{AllowedURLPrefixes: allowList}, []Entry{pinned, unpinned}, nil},
		{"off the allow-list, prefixes listed", Policy{AllowedURLPrefixes: allowList}, []Entry{pinned, elsewhere},
			[]string{`sparklet.io/fetch entry 2 (https://evil.example.net/c.jar): the platform policy (fetch.allowedURLPrefixes) allows only URLs starting with https://repo.example.com/ or https://maven.example.com/releases/`}},
		{"a longer host name does not match", Policy{AllowedURLPrefixes: allowList}, []Entry{lookalike},
			[]string{`entry 1 (https://repo.example.com.evil.net/d.jar): the platform policy (fetch.allowedURLPrefixes)`}},
		{"sha256 required", Policy{RequireSHA256: ptr(true)}, []Entry{pinned, unpinned},
			[]string{`sparklet.io/fetch entry 2 (https://repo.example.com/libs/b.jar): the platform policy (fetch.requireSHA256) requires a sha256; add sha256:`}},
		{"both problems named", Policy{RequireSHA256: ptr(true), AllowedURLPrefixes: allowList}, []Entry{unpinned, elsewhere},
			[]string{`entry 1 (https://repo.example.com/libs/b.jar): the platform policy (fetch.requireSHA256)`, `entry 2 (https://evil.example.net/c.jar): the platform policy (fetch.allowedURLPrefixes)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Check(tc.entries)
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("allowed, want a refusal")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n  %v\nwant it to contain\n  %s", err, w)
				}
			}
		})
	}
}

func TestPolicyLimits(t *testing.T) {
	for _, tc := range []struct {
		p       Policy
		bytes   int64
		timeout time.Duration
	}{
		{Policy{}, 2 << 30, 10 * time.Minute},
		{Policy{MaxSize: "500Mi", Timeout: "90s"}, 500 << 20, 90 * time.Second},
		{Policy{MaxSize: "1k", Timeout: "1h"}, 1000, time.Hour},
	} {
		if b, d := tc.p.MaxBytes(), tc.p.TimeLimit(); b != tc.bytes || d != tc.timeout {
			t.Errorf("%+v: got %d bytes and %s, want %d and %s", tc.p, b, d, tc.bytes, tc.timeout)
		}
	}
}

func TestIntersect(t *testing.T) {
	yes := true
	cluster := Policy{AllowedURLPrefixes: []string{"https://repo.example.com/", "https://mirror.example.com/"}, MaxSize: "1Gi", Timeout: "5m"}
	cases := []struct {
		name    string
		ns      Policy
		want    Policy
		wantErr string
	}{
		{"namespace silent", Policy{}, cluster, ""},
		{"namespace narrower and stricter",
			Policy{AllowedURLPrefixes: []string{"https://repo.example.com/team-a/"}, MaxSize: "100Mi", Timeout: "10m", RequireSHA256: &yes},
			Policy{AllowedURLPrefixes: []string{"https://repo.example.com/team-a/"}, MaxSize: "100Mi", Timeout: "5m", RequireSHA256: &yes}, ""},
		{"namespace wider keeps the cluster's",
			Policy{AllowedURLPrefixes: []string{"https://"}, MaxSize: "4Gi", Timeout: "90s"},
			Policy{AllowedURLPrefixes: []string{"https://repo.example.com/", "https://mirror.example.com/"}, MaxSize: "1Gi", Timeout: "90s"}, ""},
		{"nothing in common", Policy{AllowedURLPrefixes: []string{"https://other.example.com/"}}, Policy{}, "allow no URL in common"},
		{"compared decoded", Policy{AllowedURLPrefixes: []string{"https://REPO.example.com/team%2Da/"}},
			Policy{AllowedURLPrefixes: []string{"https://REPO.example.com/team%2Da/"}, MaxSize: "1Gi", Timeout: "5m"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Intersect(cluster, c.ns)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			// Whatever the intersection allows, both policies allow.
			for _, u := range []string{"https://repo.example.com/team-a/x.jar", "https://mirror.example.com/y.jar", "https://repo.example.com/z.jar"} {
				e := []Entry{{URL: u, SHA256: strings.Repeat("a", 64)}}
				if got.Check(e) == nil && (cluster.Check(e) != nil || c.ns.Check(e) != nil) {
					t.Errorf("%s passes the intersection but not both policies", u)
				}
			}
		})
	}
}
