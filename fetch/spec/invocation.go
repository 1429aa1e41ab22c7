package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// InitArgs returns the `sparklet init` arguments (after the subcommand).
// The policy travels in vocab.EnvFetchPolicy, as one JSON object whose
// fields are those of the policy's `fetch:` section (errors name them as
// fetch.<field>).
func InitArgs(annotationFile string) []string {
	return []string{"--annotation-file=" + annotationFile, "--dest=" + MountPath}
}

// EncodePolicy renders p as vocab.EnvFetchPolicy's value, its limits written out so
// that the pod shows what the init container runs under. The init container
// checks the entries against it again: the annotation file it reads follows
// the live annotation, which can be edited after admission.
func EncodePolicy(p Policy) (string, error) {
	b, err := json.Marshal(p.WithDefaults())
	if err != nil {
		return "", fmt.Errorf("encode the fetch policy: %w", err)
	}
	return string(b), nil
}

// DecodePolicy reads vocab.EnvFetchPolicy's value; empty is the empty policy. It only
// decodes: Policy.Validate checks the values.
func DecodePolicy(value string) (Policy, error) {
	var p Policy
	if strings.TrimSpace(value) == "" {
		return p, nil
	}
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, policyProblem(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Policy{}, errors.New("more than one JSON value; want one object")
	}
	return p, nil
}

func policyProblem(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("is a JSON %s; want an object", te.Value)
		}
		return fmt.Errorf("fetch.%s: want a %s, not a JSON %s", te.Field, te.Type, te.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field fetch.%s; the fetch policy has allowedURLPrefixes, requireSHA256, maxSize and timeout", strings.Trim(name, `"`))
	}
	return fmt.Errorf("not a JSON object: %v", err)
}
