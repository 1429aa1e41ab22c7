// Command nodeimages writes the images a real node runs besides sparklet's
// own, as image tarballs `ctr -n k8s.io images import` reads, without a
// container engine or a registry (hack/nodeimages/build.sh runs it; see
// docs/real-node.md):
//
//	nodeimages spark  --base-rootfs B --python-rootfs P --entrypoint E --decom D --out-dir DIR VERSION:SCALA:DIST...
//	nodeimages binary --binary F --path /pause --tag T... --out F.tar
//
// Every timestamp is --created, so the same inputs give the same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: nodeimages spark|binary [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "spark":
		err = sparkMain(os.Args[2:])
	case "binary":
		err = binaryMain(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want spark or binary", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "nodeimages:", err)
	os.Exit(1)
}

// common are the flags of every command.
type common struct {
	created *int64
	arch    *string
}

func commonFlags(fs *flag.FlagSet) common {
	return common{
		created: fs.Int64("created", 0, "creation time of every file and image in Unix seconds (SOURCE_DATE_EPOCH)"),
		arch:    fs.String("arch", "amd64", "the images' architecture"),
	}
}

func (c common) time() time.Time { return time.Unix(*c.created, 0).UTC() }

// report prints one line per image: the archive, its references, its
// manifest digest, its config digest (the image ID) and its layers' size.
func report(out string, ws []written) {
	for _, w := range ws {
		fmt.Printf("%s %s %s %s %d\n", out, strings.Join(w.tags, ","), w.manifest, w.config, w.size)
	}
}

// multiFlag is a flag that may be given more than once.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
