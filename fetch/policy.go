package fetch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Defaults where the policy is silent.
const (
	DefaultMaxSize = "2Gi"
	DefaultTimeout = 10 * time.Minute
)

// Policy is the `fetch:` section of the sparklet policy.
type Policy struct {
	// AllowedURLPrefixes, when set, are the only places files may come from.
	AllowedURLPrefixes []string `json:"allowedURLPrefixes,omitempty"`
	// RequireSHA256 refuses entries without a checksum.
	RequireSHA256 *bool `json:"requireSHA256,omitempty"`
	// MaxSize caps each download and each archive's unpacked size.
	MaxSize string `json:"maxSize,omitempty"`
	// Timeout caps the whole init container's work (a Go duration).
	Timeout string `json:"timeout,omitempty"`
}

// Validate names the field at fault.
func (p Policy) Validate() error {
	var errs []string
	for i, prefix := range p.AllowedURLPrefixes {
		if !strings.HasPrefix(prefix, "http://") && !strings.HasPrefix(prefix, "https://") {
			errs = append(errs, fmt.Sprintf("fetch.allowedURLPrefixes[%d]: %q must start with http:// or https://", i, prefix))
		}
	}
	if p.MaxSize != "" {
		if q, err := resource.ParseQuantity(p.MaxSize); err != nil || q.Sign() <= 0 {
			errs = append(errs, fmt.Sprintf("fetch.maxSize: %q is not a positive quantity such as 500Mi or 2Gi", p.MaxSize))
		}
	}
	if p.Timeout != "" {
		if d, err := time.ParseDuration(p.Timeout); err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("fetch.timeout: %q is not a positive duration such as 90s or 10m", p.Timeout))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Check refuses entries the policy forbids.
func (p Policy) Check(entries []Entry) error {
	for i, e := range entries {
		at := fmt.Sprintf("%s entry %d (%s)", Annotation, i+1, e.URL)
		if p.RequireSHA256 != nil && *p.RequireSHA256 && e.SHA256 == "" {
			return fmt.Errorf("%s: the sparklet policy requires a sha256 for every file; add sha256: <hex digest>", at)
		}
		if len(p.AllowedURLPrefixes) > 0 && !allowed(e.URL, p.AllowedURLPrefixes) {
			return fmt.Errorf("%s: the sparklet policy allows only URLs starting with %s", at, strings.Join(p.AllowedURLPrefixes, ", "))
		}
	}
	return nil
}

func allowed(url string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(url, p) {
			return true
		}
	}
	return false
}

// MaxBytes is MaxSize in bytes.
func (p Policy) MaxBytes() int64 {
	s := p.MaxSize
	if s == "" {
		s = DefaultMaxSize
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		q = resource.MustParse(DefaultMaxSize)
	}
	return q.Value()
}

// TimeLimit is Timeout as a duration.
func (p Policy) TimeLimit() time.Duration {
	d, err := time.ParseDuration(p.Timeout)
	if err != nil || d <= 0 {
		return DefaultTimeout
	}
	return d
}

// InitArgs are `sparklet init`'s flags under the policies in force. The
// policies travel along because the init container checks the entries
// again: the annotation it reads could be edited after admission.
func InitArgs(policies []Policy, annotationFile string) ([]string, error) {
	data, err := json.Marshal(policies)
	if err != nil {
		return nil, fmt.Errorf("encode fetch policies: %w", err)
	}
	return []string{"--annotation-file=" + annotationFile, "--dest=" + MountPath, "--policies=" + string(data)}, nil
}

// Limits returns the strictest size and time limits of the policies.
func Limits(policies []Policy) (maxBytes int64, timeout time.Duration) {
	maxBytes, timeout = Policy{}.MaxBytes(), DefaultTimeout
	for i, p := range policies {
		if b := p.MaxBytes(); i == 0 || b < maxBytes {
			maxBytes = b
		}
		if d := p.TimeLimit(); i == 0 || d < timeout {
			timeout = d
		}
	}
	return maxBytes, timeout
}
