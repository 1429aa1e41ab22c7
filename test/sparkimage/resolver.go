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
//   - the sparklet image the webhook injects, any tag, to binDir/sparklet;
//   - ConfImageRepo:<version>, an apache/spark image whose $SPARK_HOME/conf
//     holds the files of confDir, when confDir is set;
//   - registry.k8s.io/pause, any tag (YuniKorn's placeholders), to a
//     process that sleeps until it is stopped.
func Resolver(binDir, confDir string) podrunner.ImageResolver {
	dists, distsErr := spark.Pinned()
	javaHome, javaErr := localJavaHome()
	return resolver(binDir, confDir, dists, distsErr, javaHome, javaErr)
}

// ConfImageRepo is the repository of the Spark images with their own conf
// directory.
const ConfImageRepo = "example.com/spark-with-conf"

func resolver(binDir, confDir string, dists []spark.Dist, distsErr error, javaHome string, javaErr error) podrunner.ImageResolver {
	sparkletRepo, _ := parseReference(policy.DefaultSidecarImage(version.Version))
	return func(image string) (*podrunner.Image, error) {
		repo, tag := parseReference(image)
		switch repo {
		case "docker.io/apache/spark", "docker.io/library/spark", ConfImageRepo:
			if distsErr != nil {
				return nil, fmt.Errorf("image %s: %w", image, distsErr)
			}
			if javaErr != nil {
				return nil, fmt.Errorf("image %s: %w", image, javaErr)
			}
			if repo != ConfImageRepo {
				return sparkImage(image, tag, dists, binDir, javaHome)
			}
			if confDir == "" {
				return nil, fmt.Errorf("image %s: no conf directory is mapped for %s images", image, ConfImageRepo)
			}
			img, err := sparkImage(image, tag, dists, binDir, javaHome)
			if err != nil {
				return nil, err
			}
			img.Binds[sparkHome+"/conf"] = confDir
			return img, nil
		case sparkletRepo:
			return sparkletImage(image, binDir)
		case pauseRepo:
			return pauseImage(), nil
		}
		return nil, fmt.Errorf("image %s: no local mapping (known: apache/spark:<version>, spark:<version>, %s:<version>, %s:<tag>, %s:<tag>)", image, ConfImageRepo, sparkletRepo, pauseRepo)
	}
}
