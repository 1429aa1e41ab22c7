package sparkimage

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// lookPath finds a command as the container would: a name without a slash
// is searched in the container's PATH; a relative path is taken from the
// working directory. It returns the container's path to it; directories
// bound from the host are looked at through binds.
func lookPath(name, pathVar, workDir string, binds map[string]string) (string, error) {
	if strings.Contains(name, "/") {
		if !path.IsAbs(name) {
			name = path.Join(workDir, name)
		}
		return name, nil
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if !path.IsAbs(dir) {
			continue
		}
		p := path.Join(dir, name)
		if fi, err := os.Stat(hostPath(p, binds)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q: executable file not found in $PATH (%s)", name, pathVar)
}

// hostPath is where a container path is on the host: under the longest
// bind that holds it, or the same path.
func hostPath(p string, binds map[string]string) string {
	best := ""
	for target := range binds {
		if (p == target || strings.HasPrefix(p, strings.TrimSuffix(target, "/")+"/")) && len(target) > len(best) {
			best = target
		}
	}
	if best == "" {
		return p
	}
	return filepath.Join(binds[best], strings.TrimPrefix(p, best))
}
