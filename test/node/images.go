package node

import (
	"fmt"
	"os"
	"path/filepath"
)

// ImageTarballs are the images a node in binDir imports: those of make
// node-images in binDir/images (the pause image, kubectl, the Spark images
// and sparklet's own from make image).
func ImageTarballs(binDir string) ([]string, error) {
	dir := filepath.Join(binDir, "images")
	images, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return nil, err
	}
	for _, want := range []string{"pause.tar", "sparklet.tar"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			return nil, fmt.Errorf("%s missing: build the images with make node-images", filepath.Join(dir, want))
		}
	}
	return images, nil
}
