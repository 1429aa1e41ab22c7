package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any policy document is decoded and validated or refused
// without a panic, and an accepted one layers for any namespace.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"../examples/policy.yaml", "testdata/*.yaml", "../webhook/testdata/policy.yaml", "../charts/sparklet/values.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte("spark: {defaults: {spark.a: \"1\"}}\nnamespaces: {x: {limits: {maxExecutors: 2}}}"))
	f.Add([]byte("limits: {executor: {maxMemory: 32GB}}\nallowedImages: ['[']"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "dev")
		if err != nil {
			return
		}
		for _, ns := range []string{"default", "x", ""} {
			if p.For(ns) == nil {
				t.Fatalf("For(%q) = nil", ns)
			}
		}
	})
}
