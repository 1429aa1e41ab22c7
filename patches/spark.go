package patches

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/policy"
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

// layerConf layers the Spark configuration: sparklet's defaults, policy
// defaults (cluster, then namespace), the pod's annotation, the pod's own
// --conf arguments, then policy enforced values. It refuses what the pod
// may not set.
func layerConf(pod *corev1.Pod, p *plan) error {
	c := p.container(pod)
	args, err := parseSubmitArgs(append(append([]string{}, c.Command...), c.Args...))
	if err != nil {
		return &Refused{Reason: "bad-args", Message: fmt.Sprintf("container %q: %v", c.Name, err)}
	}
	if args.propertiesFile != "" {
		return &Refused{Reason: "properties-file", Message: fmt.Sprintf(
			"container %q passes --properties-file %s, which stops Spark 3.5 from reading the configuration sparklet "+
				"delivers in spark-defaults.conf; move its properties into the %s annotation",
			c.Name, args.propertiesFile, AnnotationSparkConf)}
	}
	if args.master != "" {
		return &Refused{Reason: "reserved-key", Message: fmt.Sprintf(
			"container %q passes --master %s: %s; remove --master", c.Name, args.master, policy.Reserved["spark.master"])}
	}
	user := map[string]string{}
	if text, ok := pod.Annotations[AnnotationSparkConf]; ok {
		if user, err = ParseSparkConf(text); err != nil {
			return &Refused{Reason: "bad-spark-conf", Message: fmt.Sprintf("annotation %s: %v", AnnotationSparkConf, err)}
		}
	}
	for _, src := range []struct {
		what string
		conf map[string]string
	}{{"annotation " + AnnotationSparkConf, user}, {fmt.Sprintf("container %q --conf", c.Name), args.conf}} {
		for _, k := range slices.Sorted(maps.Keys(src.conf)) {
			if why, ok := policy.Reserved[k]; ok {
				return &Refused{Reason: "reserved-key", Message: fmt.Sprintf("%s sets %s: %s; remove it", src.what, k, why)}
			}
			if want, ok := p.pol.Spark.Enforced[k]; ok && src.conf[k] != want {
				return &Refused{Reason: "enforced-key", Message: fmt.Sprintf(
					"%s sets %s=%s, but the sparklet policy enforces %s=%s in namespace %s; remove it or use the enforced value",
					src.what, k, src.conf[k], k, want, p.in.Namespace)}
			}
		}
	}

	conf := map[string]string{
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
	}
	if max := p.pol.Limits.MaxExecutors; max > 0 {
		conf["spark.dynamicAllocation.maxExecutors"] = strconv.Itoa(max)
	}
	for _, layer := range []map[string]string{p.pol.Spark.Defaults, user, args.conf, p.pol.Spark.Enforced} {
		for k, v := range layer {
			conf[k] = v
		}
	}
	p.conf = conf
	return nil
}

// finishConf sets the values sparklet owns and renders the effective
// configuration. The JVM's Kubernetes client finds the sidecar where it
// listens; the pod name and IP come from the env addEnv sets, which Spark
// resolves for ConfigEntry reads.
func finishConf(_ *corev1.Pod, p *plan) error {
	p.conf["spark.master"] = "k8s://http://" + p.pol.Sidecar.Listen()
	p.conf["spark.kubernetes.namespace"] = p.in.Namespace
	p.conf["spark.kubernetes.driver.pod.name"] = "${env:" + envPodName + "}"
	p.conf["spark.driver.host"] = "${env:" + envPodIP + "}"
	p.conf["spark.driver.bindAddress"] = "${env:" + envBindAddress + "}"
	if p.appID != "" { // a template's pods each get their own
		p.conf["spark.app.id"] = p.appID
	}
	p.conf["spark.kubernetes.authenticate.oauthTokenFile"] = TokenFile
	addJVMNoProxy(p.conf)
	p.confText = RenderSparkConf(p.conf)
	return nil
}
