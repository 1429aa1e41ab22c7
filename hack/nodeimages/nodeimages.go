package nodeimages

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// sandboxImage is the pause image's name: the default of containerd
// v2.4.2's CRI (pinned_images.sandbox, DefaultSandboxImage in
// internal/cri/config/config.go). build.sh reads the same file.
//
//go:embed sandbox-image
var sandboxImage string

// SandboxImage is the name the pause image is imported under, which
// containerd's configuration must pin as its sandbox image.
func SandboxImage() string { return strings.TrimSpace(sandboxImage) }

// Tarballs are the image tarballs build.sh wrote into binDir/images, each
// for `ctr -n k8s.io images import`.
func Tarballs(binDir string) ([]string, error) {
	tarballs, err := filepath.Glob(filepath.Join(binDir, "images", "*.tar"))
	if err != nil {
		return nil, err
	}
	if len(tarballs) == 0 {
		return nil, fmt.Errorf("no image tarballs in %s: run make node-images", filepath.Join(binDir, "images"))
	}
	return tarballs, nil
}

// Select is what a node that runs sparklet's chart and the given Spark
// versions imports: the pause, kubectl (helm test) and sparklet tarballs
// and spark-<version>.tar for each version. Importing only these, not
// every pinned Spark, brings the node up sooner.
func Select(binDir string, sparkVersions ...string) ([]string, error) {
	names := []string{"pause.tar", "kubectl.tar", "sparklet.tar"}
	for _, v := range sparkVersions {
		names = append(names, "spark-"+v+".tar")
	}
	var tarballs []string
	var errs []error
	for _, name := range names {
		path := filepath.Join(binDir, "images", name)
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("image tarball %s missing: run make node-images", path))
		}
		tarballs = append(tarballs, path)
	}
	return tarballs, errors.Join(errs...)
}
