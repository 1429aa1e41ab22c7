// Package sparkimage maps the images of Spark pods to this machine.
// The pod runner, which has no container runtime, runs apache/spark images
// from the pinned Spark distributions in BIN_DIR/spark
// (hack/spark/install.sh), with the image's entrypoint played in Go, and
// the sparklet image from BIN_DIR/sparklet.
package sparkimage

import (
	"fmt"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/test/podrunner"
)

// Resolver maps image references to local images under binDir:
//   - apache/spark:<version>[-<suffix>] and spark:<version>[-<suffix>], in
//     any registry spelling of Docker Hub, with or without a digest, to the
//     pinned distribution that stands in for the version (standIn);
//   - the sparklet image the webhook injects, any tag, to binDir/sparklet.
func Resolver(binDir string) podrunner.ImageResolver {
	dists, distsErr := spark.Pinned()
	javaHome, javaErr := localJavaHome()
	return resolver(binDir, dists, distsErr, javaHome, javaErr)
}

func resolver(binDir string, dists []spark.Dist, distsErr error, javaHome string, javaErr error) podrunner.ImageResolver {
	sparkletRepo, _ := parseReference(policy.DefaultSidecarImage(version.Version))
	return func(image string) (*podrunner.Image, error) {
		repo, tag := parseReference(image)
		switch repo {
		case "docker.io/apache/spark", "docker.io/library/spark":
			if distsErr != nil {
				return nil, fmt.Errorf("image %s: %w", image, distsErr)
			}
			if javaErr != nil {
				return nil, fmt.Errorf("image %s: %w", image, javaErr)
			}
			return sparkImage(image, tag, dists, binDir, javaHome)
		case sparkletRepo:
			return sparkletImage(image, binDir)
		}
		return nil, fmt.Errorf("image %s: no local mapping (known: apache/spark:<version>, spark:<version>, %s:<tag>)", image, sparkletRepo)
	}
}
