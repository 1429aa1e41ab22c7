package patches

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// The Spark container reads more than spark-defaults.conf from
// SPARK_CONF_DIR: bin/load-spark-env.sh sources spark-env.sh from it, and
// the launcher puts it first on the classpath, where log4j2.properties,
// metrics.properties, core-site.xml and hive-site.xml are found. An image's
// own $SPARK_HOME/conf holds these, so the conf init container, which runs
// the Spark container's image, copies that directory into the emptyDir
// that is the Spark container's SPARK_CONF_DIR, and appends the effective
// conf to its spark-defaults.conf.
//
// Appending is enough for the effective conf to win: Spark reads
// spark-defaults.conf with java.util.Properties.load
// (core/src/main/scala/org/apache/spark/util/Utils.scala,
// getPropertiesFromFile, v3.5.0 and v4.0.0), which puts every key into a
// Hashtable, so the last line of a key is its value. The image's
// defaults therefore rank below every layer sparklet writes. Two blank
// lines first end a line continuation the image's file may leave open.
//
// The copy needs nothing from the sidecar, so it runs while the sidecar
// starts. It reads the image's spark-defaults.conf from the image's
// directory, not from the copy, so a conf container restarted before it
// was done writes the same file again.
const confScript = `set -eu
src="${` + vocab.EnvImageConfDir + `:-${SPARK_HOME:-/opt/spark}/conf}"
dst=` + ConfDir + `
if [ -d "$src" ]; then cp -RL "$src/." "$dst/"; fi
{
  if [ -f "$src/` + ConfFile + `" ]; then cat "$src/` + ConfFile + `"; printf '\n\n'; fi
  if [ -s "` + PodInfoDir + `/` + UserConfFile + `" ]; then
    echo '` + userConfHeader + `'
    cat "` + PodInfoDir + `/` + UserConfFile + `"
    printf '\n\n'
  fi
  echo '` + effectiveConfHeader + `'
  cat "` + PodInfoDir + `/` + ConfFile + `"
} > "$dst/.sparklet-defaults.tmp"
mv "$dst/.sparklet-defaults.tmp" "$dst/` + ConfFile + `"
`

// waitForSidecar makes the conf container wait until the sidecar serves
// the JVM: it runs after the sidecar, which the kubelet counts as started
// once its process runs (addSidecar), and polls for the file the sidecar
// writes once it listens for the JVM (pollFor), which a startup probe, at
// one second at the least, cannot. The sidecar has checked its pod, and
// written the JVM's token and its serving certificate, by then; a JVM
// request that comes before its cache is filled waits for it. It waits as
// long as the sidecar takes, as the kubelet holds the JVM back behind a
// sidecar that has not started (an API server unreachable at start must
// not fail a restartPolicy Never pod), and says every 30 s in its log that
// it is waiting and where to look.
var waitForSidecar = pollFor(ServingFile, sidecarSlowNote)

// sidecarSlowNote is what the wait for the sidecar runs at each slow try.
const sidecarSlowNote = `  : "${start:=$(date +%s)}" "${next:=30}"
  if [ $(( $(date +%s) - start )) -ge "$next" ]; then
    echo "sparklet: waiting ${next}s so far for the sidecar (init container ` + SidecarName + `) to serve the Spark driver; its log says why it does not" >&2
    next=$(( next + 30 ))
  fi
`

// pollFor is a shell loop that waits until file exists: every 5 ms for
// its first 100 tries, which cover a sidecar that starts on time, then
// every 50 ms, running the shell text slow before each of those. Each
// try forks a sleep, so only a start that is late pays the slower tries.
func pollFor(file, slow string) string {
	return `n=0
while [ ! -e ` + file + ` ]; do
  if [ "$n" -lt 100 ]; then
    n=$(( n + 1 ))
    sleep 0.005 2>/dev/null || sleep 1
    continue
  fi
` + slow + `  sleep 0.05 2>/dev/null || sleep 1
done
`
}

// confContainerScript is the conf container's command: the copy and the
// wait above once (a restart finds ConfReadyFile and skips them, so the
// conf a running JVM read is never rewritten), then it stays, as a native
// sidecar must, until the kubelet's SIGTERM at the pod's end, on which it
// exits at once.
func confContainerScript(p *plan) string {
	return `trap 'exit 0' TERM INT
if [ ! -e ` + ConfReadyFile + ` ]; then
` + confOnce(p) + `fi
while :; do sleep 3600 & wait $!; done
`
}

// confOnce copies the conf, waits for the sidecar, then writes
// ConfReadyFile, which lets the hook return.
func confOnce(p *plan) string {
	return confScript + connectEnvScript(p) + waitForSidecar + `: > ` + ConfReadyFile + "\n"
}

// confReadyHook is the conf container's postStart hook. The kubelet runs
// it before it starts the next container (startContainer runs the hook
// and only then returns, pkg/kubelet/kuberuntime/kuberuntime_container.go,
// v1.37.2), so the JVM starts once the conf is written and the sidecar
// serves. A regular init container would hold the JVM back by its exit,
// which the kubelet notices only at its next relist of the runtime, up to
// a second later (docs/performance.md#a-drivers-start).
var confReadyHook = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{
	"/bin/sh", "-c", pollFor(ConfReadyFile, ""),
}}}}

// planImageConf finds the conf directory the Spark container would have
// read: its own SPARK_CONF_DIR, kept for the conf init container, or on an
// injected pod the one the conf init container already copies.
func planImageConf(pod *corev1.Pod, p *plan) error {
	c := p.container(pod)
	i := envIndex(c.Env, "SPARK_CONF_DIR")
	if i < 0 {
		return nil
	}
	e := c.Env[i]
	if e.ValueFrom == nil && path.Clean(e.Value) == ConfDir {
		// sparklet's own, or a path sparklet needs for itself.
		if _, injected := pod.Annotations[vocab.AnnotationStatus]; !injected {
			return &Refused{Reason: "spark-conf-dir", Message: fmt.Sprintf(
				"container %q: SPARK_CONF_DIR=%s is the directory sparklet writes the Spark configuration to; "+
					"point it at your own conf directory, whose files sparklet copies there", c.Name, ConfDir)}
		}
		for _, ic := range pod.Spec.InitContainers {
			if ic.Name == ConfInitName {
				if j := envIndex(ic.Env, vocab.EnvImageConfDir); j >= 0 {
					kept := ic.Env[j]
					p.imageConf = &kept
				}
			}
		}
		return nil
	}
	if e.Value != "" && !path.IsAbs(e.Value) {
		return &Refused{Reason: "spark-conf-dir", Message: fmt.Sprintf(
			"container %q: SPARK_CONF_DIR=%q is not an absolute path; use one", c.Name, e.Value)}
	}
	p.imageConf = &corev1.EnvVar{Name: vocab.EnvImageConfDir, Value: e.Value, ValueFrom: e.ValueFrom.DeepCopy()}
	return nil
}

// addConfInit adds the conf container, a native sidecar after sparklet's.
// It runs the Spark container's image, pull policy and security context,
// so the pod's security admission judges it as it judges the Spark
// container, and it mounts the Spark container's own volumes, so a conf
// directory mounted there is copied too. It holds no Kubernetes
// credential; it sees the JVM's volume, read-only, for the sidecar's
// serving file. Its postStart hook holds the JVM back (confReadyHook).
func addConfInit(pod *corev1.Pod, p *plan, done *Status) error {
	c := p.container(pod)
	mounts := []corev1.VolumeMount{
		{Name: VolumeConf, MountPath: PodInfoDir, ReadOnly: true},
		{Name: VolumeSpark, MountPath: ConfDir},
		{Name: VolumeJVM, MountPath: JVMDir, ReadOnly: true},
	}
	for _, m := range c.VolumeMounts {
		if !sparkletVolume(m.Name) && m.MountPath != PodInfoDir && m.MountPath != ConfDir {
			mounts = append(mounts, m)
		}
	}
	var env []corev1.EnvVar
	if i := envIndex(c.Env, "SPARK_HOME"); i >= 0 {
		env = append(env, c.Env[i])
	}
	if p.imageConf != nil {
		env = append(env, *p.imageConf)
	}
	always := corev1.ContainerRestartPolicyAlways
	init := corev1.Container{
		Name:                     ConfInitName,
		Image:                    c.Image,
		ImagePullPolicy:          c.ImagePullPolicy,
		RestartPolicy:            &always,
		Command:                  []string{"/bin/sh", "-c", confContainerScript(p)},
		Lifecycle:                confReadyHook,
		Env:                      env,
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          c.SecurityContext.DeepCopy(),
	}
	if r := p.pol.Sidecar.ConfResources; r != nil {
		init.Resources = *r.DeepCopy()
	}
	// Right after the sidecar, which the pod's own init containers come
	// before: they may prepare the conf directory. It waits for the
	// sidecar to serve (waitForSidecar) while the sidecar starts. A pod
	// injected by an earlier sparklet has it before the sidecar, where it
	// would wait for a sidecar that is not started yet: it moves.
	pod.Spec.InitContainers = slices.DeleteFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == ConfInitName })
	at := len(pod.Spec.InitContainers)
	for i, ic := range pod.Spec.InitContainers {
		if ic.Name == SidecarName {
			at = i + 1
			break
		}
	}
	pod.Spec.InitContainers = upsertAt(pod.Spec.InitContainers, init, at)
	done.InitContainers = append(done.InitContainers, ConfInitName)
	return nil
}

// sparkletVolume reports whether a volume is one sparklet injects.
func sparkletVolume(name string) bool {
	return strings.HasPrefix(name, "sparklet-") || strings.HasPrefix(name, VolumeLocal)
}
