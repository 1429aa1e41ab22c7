package sparkimage

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sparklet/sparklet/test/podrunner"
)

// sparkletImage maps the sparklet image to BIN_DIR/sparklet and
// BIN_DIR/sparklet-sidecar, as `make image` and the Dockerfile build it:
// the binaries at /sparklet, its ENTRYPOINT, and /sparklet-sidecar, on an
// empty base with no ENV and no WORKDIR. The runtime
// then works in / and gives the container its default PATH (containerd's
// and Docker's).
func sparkletImage(image, binDir string) (*podrunner.Image, error) {
	binds := map[string]string{}
	for _, name := range []string{"sparklet", "sparklet-sidecar"} {
		bin := filepath.Join(binDir, name)
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("image %s: %s is missing: run make build", image, bin)
		}
		binds["/"+name] = bin
	}
	return &podrunner.Image{
		Binds:      binds,
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		WorkingDir: "/",
		Entrypoint: sparkletEntrypoint,
	}, nil
}

// sparkletEntrypoint runs ENTRYPOINT ["/sparklet"] with the args, or the
// container's command in its place. The image has no shell and no PATH
// lookup of its own beyond the runtime's; a command must be absolute.
func sparkletEntrypoint(command, args, env []string) ([]string, []string, error) {
	argv := append([]string{"/sparklet"}, args...)
	if len(command) > 0 {
		argv = append(append([]string{}, command...), args...)
	}
	if !filepath.IsAbs(argv[0]) {
		return nil, nil, fmt.Errorf("sparklet image: command %q: the image has only /sparklet and /sparklet-sidecar", argv[0])
	}
	return argv, env, nil
}
