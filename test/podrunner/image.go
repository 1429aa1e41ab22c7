package podrunner

// Image is what the runner knows of a container image: no image is pulled;
// an image reference maps to directories of this machine and to a function
// that plays the image's entrypoint.
type Image struct {
	// Binds maps a path inside the container to a host path that is
	// bind-mounted there (read-only), e.g. "/opt/spark" to a local Spark
	// distribution.
	Binds map[string]string
	// Env is the image's own environment (its Dockerfile ENV), applied
	// before the container's env.
	Env []string
	// WorkingDir is the image's WORKDIR, used when the container sets none.
	WorkingDir string
	// Entrypoint turns the container's command, args and fully resolved env
	// into the process to run, as the image's ENTRYPOINT/CMD would. It
	// returns the argv (argv[0] an absolute path) and the final env.
	Entrypoint func(command, args, env []string) (argv, finalEnv []string, err error)
}

// ImageResolver maps an image reference (as written in the pod spec) to an
// Image, or returns an error naming the image when it has no local mapping.
type ImageResolver func(image string) (*Image, error)
