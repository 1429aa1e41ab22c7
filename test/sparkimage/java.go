package sparkimage

import (
	"errors"
	"os/exec"
	"path/filepath"
	"sort"
)

// localJavaHome finds the JDK that stands in for the image's
// /opt/java/openjdk: the one of `java` on PATH, else a Java 17 under
// /usr/lib/jvm (what make spark-tools installs).
func localJavaHome() (string, error) {
	if java, err := exec.LookPath("java"); err == nil {
		if real, err := filepath.EvalSymlinks(java); err == nil {
			return filepath.Dir(filepath.Dir(real)), nil
		}
	}
	homes, _ := filepath.Glob("/usr/lib/jvm/java-17-openjdk*/bin/java")
	if len(homes) == 0 {
		return "", errors.New("no java on PATH or in /usr/lib/jvm: run make spark-tools")
	}
	sort.Strings(homes)
	return filepath.Dir(filepath.Dir(homes[0])), nil
}
