package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// sparkUID is the spark user's uid and gid (apache/spark-docker's
// Dockerfile.template, ARG spark_uid=185).
const sparkUID = 185

// sparkEnv is the official images' environment (eclipse-temurin's PATH,
// JAVA_HOME and locale, the Dockerfile's SPARK_HOME). Left out: the build's
// SPARK_TGZ_URL, SPARK_TGZ_ASC_URL and GPG_KEY, and JAVA_VERSION, which
// names a Temurin build.
var sparkEnv = []string{
	"PATH=/opt/java/openjdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"JAVA_HOME=/opt/java/openjdk",
	"LANG=en_US.UTF-8",
	"LANGUAGE=en_US:en",
	"LC_ALL=en_US.UTF-8",
	"SPARK_HOME=/opt/spark",
}

// sparkDist is one VERSION:SCALA:DIR argument.
type sparkDist struct{ version, scala, dir string }

// sparkMain writes one tarball per Spark version, spark-VERSION.tar, with
// two images that share the base and Spark layers: the one with python3
// and the one without.
func sparkMain(args []string) error {
	fs := flag.NewFlagSet("spark", flag.ContinueOnError)
	c := commonFlags(fs)
	baseRootfs := fs.String("base-rootfs", "", "the rootfs tarball of every image (mmdebstrap's output)")
	pythonRootfs := fs.String("python-rootfs", "", "the same rootfs with python3 added")
	entrypoint := fs.String("entrypoint", "", "the /opt/entrypoint.sh to install")
	decom := fs.String("decom", "", "the /opt/decom.sh to install")
	outDir := fs.String("out-dir", "", "where to write spark-VERSION.tar")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *baseRootfs == "" || *pythonRootfs == "" || *entrypoint == "" || *decom == "" || *outDir == "" {
		return fmt.Errorf("spark: --base-rootfs, --python-rootfs, --entrypoint, --decom and --out-dir are required")
	}
	var dists []sparkDist
	for _, a := range fs.Args() {
		f := strings.SplitN(a, ":", 3)
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return fmt.Errorf("spark: argument %q: want VERSION:SCALA:DIST_DIR, e.g. 3.5.9:2.12:bin/spark/3.5.9", a)
		}
		if _, err := os.Stat(filepath.Join(f[2], "jars")); err != nil {
			return fmt.Errorf("spark %s: %s is no Spark distribution (run make spark-dists): %w", f[0], f[2], err)
		}
		dists = append(dists, sparkDist{f[0], f[1], f[2]})
	}
	if len(dists) == 0 {
		return fmt.Errorf("spark: no VERSION:SCALA:DIST_DIR given")
	}
	work, err := os.MkdirTemp(*outDir, ".spark-layers.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	base, err := writeLayer(filepath.Join(work, "base"), "Debian bookworm with a Java 17 runtime and the spark user (mmdebstrap)",
		copyRootfs(*baseRootfs))
	if err != nil {
		return err
	}
	python, err := writeLayer(filepath.Join(work, "python"), "python3 and pip (mmdebstrap)", diffRootfs(*baseRootfs, *pythonRootfs))
	if err != nil {
		return err
	}
	for _, d := range dists {
		files, err := sparkFiles(d.dir, *entrypoint, *decom)
		if err != nil {
			return err
		}
		spark, err := writeLayer(filepath.Join(work, "spark-"+d.version), "Spark "+d.version+" at /opt/spark, /opt/entrypoint.sh and /opt/decom.sh",
			writeFiles(files, c.time()))
		if err != nil {
			return err
		}
		config := v1.Config{
			Env:        sparkEnv,
			Entrypoint: []string{"/opt/entrypoint.sh"},
			WorkingDir: "/opt/spark/work-dir",
			User:       "spark",
		}
		out := filepath.Join(*outDir, "spark-"+d.version+".tar")
		pyTags, scalaTags := sparkTags(d.version, d.scala)
		description := "Apache Spark " + d.version + " (Scala " + d.scala + ", Java 17) laid out as apache/spark, built by sparklet's hack/nodeimages on Debian bookworm"
		ws, err := writeArchive(out, []image{
			{layers: []layer{base, python, spark}, config: config, labels: labels("spark", d.version, description+" with python3"), tags: pyTags},
			{layers: []layer{base, spark}, config: config, labels: labels("spark", d.version, description), tags: scalaTags},
		}, *c.arch, c.time())
		if err != nil {
			return err
		}
		report(out, ws)
		os.Remove(spark.path)
	}
	return nil
}

// sparkTags are the tags users write for the image of Spark version with
// python3 and for the one without, as apache/spark-docker's versions.json
// names its Java 17 images: 3.5.x calls them 3.5.x-java17(-python3) and
// 3.5.x-java17-scala, 4.0.x calls them 4.0.x(-python3) and 4.0.x-scala,
// 4.1.x calls them 4.1.x-java17 and 4.1.x-scala-java17. Each image here
// gets all of them, and the plain tags too, which name Java 11 in 3.5.x
// and Java 21 from 4.1.0 on (docs/real-node.md).
func sparkTags(version, scala string) (python, noPython []string) {
	repo := "docker.io/apache/spark:" + version
	python = []string{repo, repo + "-python3", repo + "-java17", repo + "-java17-python3", repo + "-scala" + scala + "-java17-python3-ubuntu"}
	noPython = []string{repo + "-scala", repo + "-java17-scala", repo + "-scala-java17", repo + "-scala" + scala + "-java17-ubuntu"}
	return python, noPython
}

// sparkFiles is the Spark layer: the distribution at /opt/spark owned by
// spark, WORKDIR /opt/spark/work-dir group-writable, /opt/entrypoint.sh
// owned by root and /opt/decom.sh by spark, as the Dockerfile leaves them.
// The distribution's .stamp (hack/spark/install.sh's) and its empty conf/
// (which the image has not) stay out.
func sparkFiles(dist, entrypoint, decom string) ([]file, error) {
	files, err := tree(dist, "opt/spark", sparkUID, sparkUID, ".stamp", "conf")
	if err != nil {
		return nil, err
	}
	workDir := false
	for i := range files {
		if files[i].name == "opt/spark/work-dir/" {
			files[i].mode, workDir = 0o775, true
		}
	}
	if !workDir {
		files = append(files, file{name: "opt/spark/work-dir/", uid: sparkUID, gid: sparkUID, mode: 0o775})
	}
	return append(files,
		file{name: "opt/entrypoint.sh", src: entrypoint, mode: 0o755},
		file{name: "opt/decom.sh", src: decom, uid: sparkUID, gid: sparkUID, mode: 0o755},
	), nil
}
