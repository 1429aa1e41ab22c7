package sparkimage

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/podrunner"
)

// sparkHome is the image's SPARK_HOME, where its distribution is.
const sparkHome = "/opt/spark"

// sparkImage maps an apache/spark image to the pinned distribution that
// stands in for its version (see standIn).
func sparkImage(image, tag string, dists []spark.Dist, binDir, javaHome string) (*podrunner.Image, error) {
	major, minor, err := tagVersion(tag)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", image, err)
	}
	d, ok := standIn(dists, major, minor)
	if !ok {
		return nil, fmt.Errorf("image %s: no pinned Spark distribution runs Spark %d.%d (hack/spark/versions)", image, major, minor)
	}
	if err := d.Installed(binDir); err != nil {
		return nil, fmt.Errorf("image %s: %w", image, err)
	}
	img := &podrunner.Image{
		Binds:      map[string]string{sparkHome: d.Home(binDir)},
		Env:        sparkEnv(javaHome),
		WorkingDir: sparkHome + "/work-dir",
	}
	img.Entrypoint = sparkEntrypoint{binds: img.Binds, workDir: img.WorkingDir}.run
	return img, nil
}

// tagVersion reads the Spark version from an image tag: "3.5.4",
// "3.5.4-python3", "4.0.0-scala2.13-java17-python3-ubuntu",
// "4.2.0-preview5". The suffix is ignored: the local JDK and python3 stand
// in for every variant.
func tagVersion(tag string) (major, minor int, err error) {
	version, _, _ := strings.Cut(tag, "-")
	parts := strings.Split(version, ".")
	if len(parts) == 2 || len(parts) == 3 {
		major, errMajor := strconv.Atoi(parts[0])
		minor, errMinor := strconv.Atoi(parts[1])
		if errMajor == nil && errMinor == nil {
			return major, minor, nil
		}
	}
	return 0, 0, fmt.Errorf("tag %q names no Spark version (want e.g. 3.5.9 or 3.5.9-scala2.12-java17-python3-ubuntu)", tag)
}

// standIn picks the distribution an image of Spark major.minor runs on: the
// pin of that major.minor, else the oldest pin of a later minor of the same
// major (4.1 and 4.2 run on the 4.3 pin). An exact patch is not required.
// dists is oldest first.
func standIn(dists []spark.Dist, major, minor int) (spark.Dist, bool) {
	for _, d := range dists {
		if d.Major == major && d.Minor >= minor {
			return d, true
		}
	}
	return spark.Dist{}, false
}

// sparkEnv is the image's own environment, with the local JDK in place of
// the image's /opt/java/openjdk.
func sparkEnv(javaHome string) []string {
	return []string{
		// eclipse-temurin:17-jammy, the images' base
		// (adoptium/containers 17/jdk/ubuntu/jammy/Dockerfile). Its locale,
		// en_US.UTF-8, is generated in the image but not here; C.UTF-8 keeps
		// the JVM's and python's encodings UTF-8.
		"PATH=" + javaHome + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"JAVA_HOME=" + javaHome,
		"LANG=C.UTF-8",
		"LANGUAGE=en_US:en",
		"LC_ALL=C.UTF-8",
		// apache/spark-docker's Dockerfile. The python3 variants add no ENV:
		// they install python3, found as /usr/bin/python3 on this PATH.
		"SPARK_HOME=" + sparkHome,
		// Not the image's: every JVM of the pod runner compiles with C1
		// only, which halves a short job's CPU (SparkPi: 10.0 CPU-s →
		// 5.3, docs/real-spark.md#images). The real node runs the image's.
		"JDK_JAVA_OPTIONS=-XX:TieredStopAtLevel=1",
	}
}
