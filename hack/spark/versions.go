package spark

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

//go:embed versions
var versionsFile string

// Dist is one pinned Spark distribution.
type Dist struct {
	Version string // e.g. "3.5.9"
	Scala   string // Scala binary version, e.g. "2.12"
	SHA256  string // of the pyspark sdist on PyPI
	Major   int
	Minor   int
}

// Pinned returns the pinned distributions, oldest first.
func Pinned() ([]Dist, error) { return parse(versionsFile) }

func parse(text string) ([]Dist, error) {
	var dists []Dist
	for n, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("hack/spark/versions line %d: want version, scala and sha256, got %q", n+1, line)
		}
		d := Dist{Version: f[0], Scala: f[1], SHA256: f[2]}
		v := strings.Split(d.Version, ".")
		var errMajor, errMinor error
		if len(v) == 3 {
			d.Major, errMajor = strconv.Atoi(v[0])
			d.Minor, errMinor = strconv.Atoi(v[1])
		}
		if len(v) != 3 || errMajor != nil || errMinor != nil {
			return nil, fmt.Errorf("hack/spark/versions line %d: version %q is not major.minor.patch", n+1, d.Version)
		}
		dists = append(dists, d)
	}
	sort.Slice(dists, func(i, j int) bool {
		if dists[i].Major != dists[j].Major {
			return dists[i].Major < dists[j].Major
		}
		return dists[i].Minor < dists[j].Minor
	})
	for i := 1; i < len(dists); i++ {
		if dists[i].Major == dists[i-1].Major && dists[i].Minor == dists[i-1].Minor {
			return nil, fmt.Errorf("hack/spark/versions pins %s and %s: one per major.minor", dists[i-1].Version, dists[i].Version)
		}
	}
	return dists, nil
}

// Home is where install.sh puts the distribution under binDir; it is laid
// out as /opt/spark in the official apache/spark image.
func (d Dist) Home(binDir string) string { return filepath.Join(binDir, "spark", d.Version) }

// ExamplesJar is the examples jar's path relative to Home, as in the
// official image.
func (d Dist) ExamplesJar() string {
	return "examples/jars/spark-examples_" + d.Scala + "-" + d.Version + ".jar"
}

var (
	imageRef    = regexp.MustCompile(`apache/spark:[0-9.]+`)
	examplesJar = regexp.MustCompile(`spark-examples_[0-9.]+-[0-9.]+\.jar`)
)

// Retarget is manifest with the apache/spark images and examples jars it
// names replaced by d's: an example written for one Spark run on this pin.
func (d Dist) Retarget(manifest []byte) []byte {
	text := imageRef.ReplaceAllString(string(manifest), "apache/spark:"+d.Version)
	return []byte(examplesJar.ReplaceAllString(text, "spark-examples_"+d.Scala+"-"+d.Version+".jar"))
}

// Installed reports an error unless install.sh installed this pin under
// binDir: its stamp starts with the pin.
func (d Dist) Installed(binDir string) error {
	stamp, err := os.ReadFile(filepath.Join(d.Home(binDir), ".stamp"))
	if err != nil {
		return fmt.Errorf("spark %s is not installed in %s: run make spark-dists", d.Version, d.Home(binDir))
	}
	f := strings.Fields(string(stamp))
	if len(f) < 3 || f[0] != d.Version || f[1] != d.Scala || f[2] != d.SHA256 {
		return fmt.Errorf("spark %s in %s was installed from another pin: run make spark-dists", d.Version, d.Home(binDir))
	}
	return nil
}
