package spec

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseAnnotation: any sparklet.io/fetch value is parsed or refused
// without a panic, every accepted URL passes checkPath, and the Spark conf
// of what is accepted can be built.
func FuzzParseAnnotation(f *testing.F) {
	files, _ := filepath.Glob("testdata/annotation/*")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(string(data))
		}
	}
	f.Add("https://repo.example.com/a.jar\n# c\n")
	f.Add(`[{"url": "https://x/a.tgz", "sha256": "AB", "unpack": "tar.gz", "dest": "../x"}]`)
	f.Add("https://x/a/%2e%2E/b.jar\nhttps://x/a/..%2fb.jar\nhttps://x/a\\..\\b.jar\nhttps://x/a/%252e%252e/b.jar")
	f.Fuzz(func(t *testing.T, value string) {
		entries, err := ParseAnnotation(value)
		if err != nil {
			return
		}
		for _, e := range entries {
			// An accepted URL's path has nothing a server could decode
			// into a step outside of it.
			u, err := url.Parse(e.URL)
			if err != nil {
				t.Fatalf("accepted %q, which does not parse: %v", e.URL, err)
			}
			if err := checkPath(u.EscapedPath()); err != nil {
				t.Fatalf("accepted %q, whose path %v", e.URL, err)
			}
		}
		_ = SparkConf(entries)
	})
}
