package spec

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Defaults where the policy is silent.
const (
	DefaultMaxSize = "2Gi"
	DefaultTimeout = 10 * time.Minute
)

// Policy is the `fetch:` section of the platform policy.
type Policy struct {
	// AllowedURLPrefixes are the only places files may come from. Empty
	// means any http or https URL.
	AllowedURLPrefixes []string `json:"allowedURLPrefixes,omitempty"`
	// RequireSHA256 refuses entries without a pinned digest.
	RequireSHA256 *bool `json:"requireSHA256,omitempty"`
	// MaxSize caps each download and each archive's unpacked total
	// (a quantity such as 500Mi; default 2Gi).
	MaxSize string `json:"maxSize,omitempty"`
	// Timeout caps the init container's whole run (a Go duration such as
	// 90s or 10m; default 10m).
	Timeout string `json:"timeout,omitempty"`
}

// Validate names each field at fault.
func (p Policy) Validate() error {
	if errs := p.Problems(); len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Problems lists what Validate refuses, one problem per entry, each
// starting with its path from fetch.
func (p Policy) Problems() []string {
	var errs []string
	for i, prefix := range p.AllowedURLPrefixes {
		if err := checkPrefix(prefix); err != nil {
			errs = append(errs, fmt.Sprintf("fetch.allowedURLPrefixes[%d]: %q %v", i, prefix, err))
		}
	}
	if p.MaxSize != "" {
		if q, err := resource.ParseQuantity(p.MaxSize); err != nil {
			errs = append(errs, fmt.Sprintf("fetch.maxSize: %q is not a quantity; write for example 500Mi or 2Gi", p.MaxSize))
		} else if q.Value() <= 0 {
			errs = append(errs, fmt.Sprintf("fetch.maxSize: %q must be at least one byte", p.MaxSize))
		}
	}
	if p.Timeout != "" {
		if d, err := time.ParseDuration(p.Timeout); err != nil {
			errs = append(errs, fmt.Sprintf("fetch.timeout: %q is not a duration; write for example 90s or 10m", p.Timeout))
		} else if d <= 0 {
			errs = append(errs, fmt.Sprintf("fetch.timeout: %q must be positive", p.Timeout))
		}
	}
	return errs
}

// checkPrefix wants scheme, host and the slash after the host, so that
// https://repo.example.com cannot also allow https://repo.example.com.evil.net.
func checkPrefix(prefix string) error {
	u, err := url.Parse(prefix)
	switch {
	case err != nil:
		return fmt.Errorf("is not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must start with http:// or https://")
	case u.Host == "" || u.User != nil:
		return errors.New("must name a host, without credentials")
	case !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(prefix, u.Scheme+"://"+u.Host+"?"):
		return fmt.Errorf("must include the path after the host, at least %q, so that longer host names do not match", u.Scheme+"://"+u.Host+"/")
	}
	if err := checkPath(u.EscapedPath()); err != nil {
		return fmt.Errorf("path: %v", err)
	}
	return nil
}

// Check refuses the entries the policy forbids, all of them in one message.
func (p Policy) Check(entries []Entry) error {
	var errs []string
	for i, e := range entries {
		if p.RequireSHA256 != nil && *p.RequireSHA256 && e.SHA256 == "" {
			errs = append(errs, fmt.Sprintf("%s: the platform policy (fetch.requireSHA256) requires a sha256; add sha256: \"<64 hex digits>\" (sha256sum prints it)", where(i, e.URL)))
		}
		if len(p.AllowedURLPrefixes) > 0 && !p.allows(e.URL) {
			errs = append(errs, fmt.Sprintf("%s: the platform policy (fetch.allowedURLPrefixes) allows only URLs starting with %s", where(i, e.URL), strings.Join(p.AllowedURLPrefixes, " or ")))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// allows judges a URL as the server will read it: its path decoded, and
// refused outright when decoding could step out of a prefix (checkPath).
func (p Policy) allows(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || checkPath(u.EscapedPath()) != nil {
		return false
	}
	have := judged(u)
	for _, prefix := range p.AllowedURLPrefixes {
		if strings.HasPrefix(have, judgedPrefix(prefix)) {
			return true
		}
	}
	return false
}

// judgedPrefix is an allowed prefix as URLs are compared with it.
func judgedPrefix(prefix string) string {
	u, err := url.Parse(prefix)
	if err != nil {
		return prefix
	}
	return judged(u)
}

// MaxBytes is MaxSize in bytes, or the default's when unset or invalid.
func (p Policy) MaxBytes() int64 {
	if q, err := resource.ParseQuantity(p.MaxSize); err == nil && q.Value() > 0 {
		return q.Value()
	}
	q := resource.MustParse(DefaultMaxSize)
	return q.Value()
}

// WithDefaults writes out the size and time limits p leaves unset.
func (p Policy) WithDefaults() Policy {
	if p.MaxSize == "" {
		p.MaxSize = DefaultMaxSize
	}
	if p.Timeout == "" {
		p.Timeout = DefaultTimeout.String()
	}
	return p
}

// TimeLimit is Timeout, or the default when unset or invalid.
func (p Policy) TimeLimit() time.Duration {
	if d, err := time.ParseDuration(p.Timeout); err == nil && d > 0 {
		return d
	}
	return DefaultTimeout
}

// Intersect returns the one policy that allows exactly what every given
// policy allows: a sha256 is required if any requires it, the smallest size
// and time limits win, and a URL must match a prefix of every non-empty
// prefix list. It fails when two prefix lists share nothing, since no URL
// could then pass.
func Intersect(ps ...Policy) (Policy, error) {
	var out Policy
	for _, p := range ps {
		if p.RequireSHA256 != nil && *p.RequireSHA256 {
			t := true
			out.RequireSHA256 = &t
		}
		if p.MaxSize != "" && (out.MaxSize == "" || p.MaxBytes() < out.MaxBytes()) {
			out.MaxSize = p.MaxSize
		}
		if p.Timeout != "" && (out.Timeout == "" || p.TimeLimit() < out.TimeLimit()) {
			out.Timeout = p.Timeout
		}
		switch {
		case len(p.AllowedURLPrefixes) == 0:
		case len(out.AllowedURLPrefixes) == 0:
			out.AllowedURLPrefixes = append([]string(nil), p.AllowedURLPrefixes...)
		default:
			both := commonPrefixes(out.AllowedURLPrefixes, p.AllowedURLPrefixes)
			if len(both) == 0 {
				return Policy{}, fmt.Errorf("fetch.allowedURLPrefixes: the cluster and namespace lists (%s; %s) allow no URL in common",
					strings.Join(out.AllowedURLPrefixes, ", "), strings.Join(p.AllowedURLPrefixes, ", "))
			}
			out.AllowedURLPrefixes = both
		}
	}
	return out, nil
}

// commonPrefixes lists the prefixes a URL must start with to start with
// one of a and one of b: of two related prefixes, the longer, compared as
// URLs are judged (decoded).
func commonPrefixes(a, b []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range a {
		for _, y := range b {
			p := ""
			switch jx, jy := judgedPrefix(x), judgedPrefix(y); {
			case strings.HasPrefix(jy, jx):
				p = y
			case strings.HasPrefix(jx, jy):
				p = x
			}
			if p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}
