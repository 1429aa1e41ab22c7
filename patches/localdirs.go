package patches

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// localDir is an emptyDir sparklet adds for Spark's scratch space.
type localDir struct{ volume, path string }

// planLocalDirs decides Spark's local dirs as Spark's LocalDirsFeatureStep
// does for the pods it builds (resource-managers/kubernetes, 3.5.x and
// 4.x): the Spark container's own mounts of volumes named
// spark-local-dir-* (a PVC, as Spark's "Local Storage" docs teach) are
// the local dirs, and then sparklet adds none; else the dirs the pod's
// SPARK_LOCAL_DIRS or the conf's spark.local.dir name, each backed by an
// emptyDir unless the container already mounts a volume there; else the
// policy's localDirs.count emptyDirs under /var/data. A SPARK_LOCAL_DIRS
// of the pod's own is kept as it is.
func planLocalDirs(pod *corev1.Pod, p *plan) error {
	c := p.container(pod)
	var mounted []string
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(m.Name, VolumeLocal) && !p.prior.owns(m.Name) {
			mounted = append(mounted, m.MountPath)
		}
	}
	env, userEnv := p.userEnv(c, "SPARK_LOCAL_DIRS")
	if userEnv && env.ValueFrom != nil {
		p.warn(fmt.Sprintf("container %q: SPARK_LOCAL_DIRS comes from valueFrom, which sparklet cannot read; it is kept, "+
			"and sparklet adds no spark-local-dir emptyDirs, so make sure a volume is mounted where it points", c.Name))
		return nil
	}
	if len(mounted) > 0 {
		if !userEnv {
			p.localDirsEnv = strings.Join(mounted, ",")
		}
		return nil
	}
	taken := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		taken[v.Name] = !p.prior.owns(v.Name)
	}
	n := 1
	nextName := func() string {
		for taken[fmt.Sprintf("%s%d", VolumeLocal, n)] {
			n++
		}
		n++
		return fmt.Sprintf("%s%d", VolumeLocal, n-1)
	}
	// Each dir with the volume name that backs it; "" for a name to pick.
	type dir struct{ path, volume string }
	var dirs []dir
	switch {
	case userEnv:
		for _, d := range splitList(env.Value) {
			dirs = append(dirs, dir{path: d})
		}
	case strings.TrimSpace(p.conf["spark.local.dir"]) != "":
		for _, d := range splitList(p.conf["spark.local.dir"]) {
			dirs = append(dirs, dir{path: d})
		}
	default:
		for range p.pol.LocalDirs.Count {
			name := nextName()
			dirs = append(dirs, dir{LocalDirRoot + name, name})
		}
	}
	var paths []string
	for _, d := range dirs {
		paths = append(paths, d.path)
		mountedThere := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return path.Clean(m.MountPath) == path.Clean(d.path) && !p.prior.owns(m.Name)
		})
		if !path.IsAbs(d.path) || mountedThere {
			continue // the user's own volume, or no place to mount one
		}
		if d.volume == "" {
			d.volume = nextName()
		}
		p.localDirs = append(p.localDirs, localDir{d.volume, d.path})
	}
	if !userEnv {
		p.localDirsEnv = strings.Join(paths, ",")
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
