package node

import (
	"fmt"
	"os"
	"path/filepath"
)

// SandboxImage is the pause image's reference: containerd v2.4's default
// pinned sandbox image (internal/cri/config/config.go,
// DefaultSandboxImage), built here by hack/nodeimages.
const SandboxImage = "registry.k8s.io/pause:3.10.2"

// ImageTarballs are the images a node in binDir imports: sparklet's own
// (make image) and those of hack/nodeimages (the pause image, kubectl,
// the Spark images).
func ImageTarballs(binDir string) ([]string, error) {
	images, err := filepath.Glob(filepath.Join(binDir, "images", "*.tar"))
	if err != nil {
		return nil, err
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("no image tarballs in %s: build them with make node-images", filepath.Join(binDir, "images"))
	}
	own := filepath.Join(binDir, "sparklet-image.tar")
	if _, err := os.Stat(own); err != nil {
		return nil, fmt.Errorf("%s missing: build it with make image", own)
	}
	return append(images, own), nil
}
