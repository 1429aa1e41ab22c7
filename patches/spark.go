package patches

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches/sparkconf"
	"github.com/sparklet/sparklet/vocab"
)

// sparkContainerNames are the names that mark the Spark container, in
// order: Spark's own (BasicDriverFeatureStep), the usual ones, Airflow's
// KubernetesPodOperator's "base" and Argo Workflows' "main".
var sparkContainerNames = []string{"spark-kubernetes-driver", "driver", "spark", "base", "main"}

func findSparkContainer(pod *corev1.Pod, p *plan) error {
	i, err := findContainer(pod, sparkContainerNames)
	p.spark = i
	return err
}

// layerConf layers the Spark configuration: what the container's env
// gives the JVM (readEnvRoutes), sparklet's defaults, policy defaults
// (cluster, then namespace), the pod's annotation, the Spark container's
// command line (or PYSPARK_SUBMIT_ARGS for a Python program), then policy
// enforced values. It refuses what the pod may not set.
func layerConf(pod *corev1.Pod, p *plan) error {
	c := p.container(pod)
	env := envOf(c, p.pol.Driver)
	args, cmd, err := readArgs(c, env, p)
	if err != nil {
		return err
	}
	p.cmd = cmd
	command := confSource{fmt.Sprintf("container %q", c.Name), args.conf, args.from, false}
	if cmd.Launcher == "python" {
		if command, err = readPySparkSubmitArgs(c, env, p); err != nil {
			return err
		}
	}
	user := map[string]string{}
	if text, ok := pod.Annotations[vocab.AnnotationSparkConf]; ok {
		if user, err = sparkconf.Parse(text); err != nil {
			return &Refused{Reason: "bad-spark-conf", Message: fmt.Sprintf("annotation %s: %v", vocab.AnnotationSparkConf, err)}
		}
	}
	annotation := confSource{"annotation " + vocab.AnnotationSparkConf, user, nil, false}
	routes, err := readEnvRoutes(c, env, cmd, []confSource{annotation, command}, p)
	if err != nil {
		return err
	}
	sources := append([]confSource{
		{"policy spark.defaults", p.pol.Spark.Defaults, nil, true},
		{"policy spark.enforced", p.pol.Spark.Enforced, nil, true},
		annotation,
		command,
	}, routes...)
	for _, src := range sources {
		if err := src.check(p); err != nil {
			return err
		}
		src.warnForeign(p)
	}

	// The environment's routes rank below everything in spark-defaults.conf.
	conf := map[string]string{}
	for _, r := range routes {
		maps.Copy(conf, r.conf)
	}
	for k, v := range map[string]string{
		"spark.kubernetes.container.image": c.Image,
		// The sidecar creates executors with its own concurrency and rate
		// limits, so the JVM may ask in larger batches than Spark's 5 (3.5)
		// or 10 (4.0) per second.
		"spark.kubernetes.allocation.batch.size": strconv.Itoa(DefaultAllocationBatchSize),
		// Spark's 30 s poll replaces its whole executor snapshot with a
		// LIST, undoing watch updates that arrived while the LIST was in
		// flight (replaceSnapshot in ExecutorPodsSnapshotsStoreImpl.scala,
		// 3.5.9 to 4.3.0); the allocator then counts those executors
		// missing and creates more. The sidecar's watch never drops and
		// resumes with what was missed, deletions included, so the poll
		// only adds that race.
		"spark.kubernetes.executor.enableApiPolling": "false",
	} {
		conf[k] = v
	}
	if lineOfImage(c.Image).atLeast(exitExceptionSince) {
		conf[KeyAnnotateExitException] = "true"
	}
	if max := p.pol.Limits.MaxExecutors; max > 0 {
		conf["spark.dynamicAllocation.maxExecutors"] = strconv.Itoa(max)
	}
	for _, layer := range []map[string]string{p.pol.Spark.Defaults, user, command.conf, p.pol.Spark.Enforced} {
		for k, v := range layer {
			conf[k] = v
		}
	}
	p.conf, p.userConf = conf, user
	p.podConf = append([]confSource{annotation, command}, routes...)
	return nil
}

// finishConf sets the values sparklet owns and renders the effective
// configuration, without what the pod's own annotation already says
// (DeliveredConf). The JVM's Kubernetes client finds the sidecar where it
// listens; the pod name and IP come from the env addEnv sets, which Spark
// resolves for ConfigEntry reads.
func finishConf(pod *corev1.Pod, p *plan) error {
	p.conf["spark.master"] = "k8s://http://" + p.pol.Sidecar.Listen()
	p.conf["spark.kubernetes.namespace"] = p.in.Namespace
	p.conf["spark.kubernetes.driver.pod.name"] = "${env:" + vocab.EnvPodName + "}"
	p.conf["spark.driver.host"] = "${env:" + vocab.EnvPodIP + "}"
	p.conf["spark.driver.bindAddress"] = "${env:" + envBindAddress + "}"
	if p.appID != "" && !p.appPerJVM { // a template's pods each get their own; Spark gives each JVM its own
		p.conf["spark.app.id"] = p.appID
	}
	p.conf["spark.kubernetes.authenticate.oauthTokenFile"] = TokenFile
	// The clients Spark builds as the driver rather than as the scheduler
	// backend, such as the exit-exception annotation's (4.1+), read these.
	p.conf["spark.kubernetes.driver.master"] = "http://" + p.pol.Sidecar.Listen()
	p.conf["spark.kubernetes.authenticate.driver.mounted.oauthTokenFile"] = TokenFile
	addJVMNoProxy(p.conf)
	unsafe := func(k, v string) bool { return sparkconf.UnsafeText(k, v) != "" }
	for _, k := range sortedWhere(p.conf, unsafe) {
		return &Refused{Reason: "unsafe-spark-conf", Message: fmt.Sprintf(
			"the effective Spark configuration sets %q %s; a Spark property is one line of spark-defaults.conf", k, sparkconf.UnsafeText(k, p.conf[k]))}
	}
	p.confText = sparkconf.Render(changedFrom(p.conf, p.userConf))
	if user, ok := pod.Annotations[vocab.AnnotationSparkConf]; ok { // projected by addVolumes
		p.confDigest = sparkconf.Digest(deliveredConf(user, true, p.confText))
	} else {
		p.confDigest = sparkconf.Digest(p.confText)
	}
	return nil
}
