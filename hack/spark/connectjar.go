package spark

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"strings"
)

//go:embed connect-jar
var connectJarFile string

// Jar is a jar pinned on Maven Central.
type Jar struct {
	Group, Artifact, Version string
	SHA256                   string
}

// ConnectJar is the pinned Spark Connect server jar for Spark 3.5
// (hack/spark/connect-jar), which connect-jar.sh downloads.
func ConnectJar() (Jar, error) {
	for n, line := range strings.Split(connectJarFile, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 4 {
			return Jar{}, fmt.Errorf("hack/spark/connect-jar line %d: want group, artifact, version and sha256, got %q", n+1, line)
		}
		return Jar{Group: f[0], Artifact: f[1], Version: f[2], SHA256: f[3]}, nil
	}
	return Jar{}, fmt.Errorf("hack/spark/connect-jar pins no jar")
}

// Name is the jar's file name.
func (j Jar) Name() string { return j.Artifact + "-" + j.Version + ".jar" }

// Path is where connect-jar.sh puts it under the cache dir (.cache/spark).
func (j Jar) Path(cacheDir string) string { return filepath.Join(cacheDir, j.Name()) }
