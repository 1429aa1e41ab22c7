package sparkimage

import "github.com/sparklet/sparklet/test/podrunner"

// pauseRepo is the pause image's repository: the image of YuniKorn's
// placeholder pods (registry.k8s.io/pause:3.7, yunikorn-k8shim v1.9.0
// pkg/common/constants/constants.go PlaceholderContainerImage).
const pauseRepo = "registry.k8s.io/pause"

// pauseImage plays the pause image, whose ENTRYPOINT ["/pause"] does
// nothing until it is stopped: this machine's sleep, forever, stands in.
func pauseImage() *podrunner.Image {
	return &podrunner.Image{
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		WorkingDir: "/",
		Entrypoint: func(command, args, env []string) ([]string, []string, error) {
			if len(command) > 0 {
				return append(append([]string{}, command...), args...), env, nil
			}
			return []string{"/bin/sleep", "infinity"}, env, nil
		},
	}
}
