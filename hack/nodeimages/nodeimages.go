package nodeimages

import (
	_ "embed"
	"fmt"
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
