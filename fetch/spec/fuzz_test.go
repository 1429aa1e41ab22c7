package spec

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseAnnotation: any sparklet.io/fetch value is parsed or refused
// without a panic, and the Spark conf of what is accepted can be built.
func FuzzParseAnnotation(f *testing.F) {
	files, _ := filepath.Glob("testdata/annotation/*")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(string(data))
		}
	}
	f.Add("https://repo.example.com/a.jar\n# c\n")
	f.Add(`[{"url": "https://x/a.tgz", "sha256": "AB", "unpack": "tar.gz", "dest": "../x"}]`)
	f.Fuzz(func(t *testing.T, value string) {
		entries, err := ParseAnnotation(value)
		if err != nil {
			return
		}
		_ = SparkConf(entries)
	})
}
