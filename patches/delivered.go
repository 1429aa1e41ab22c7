package patches

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/sparklet/sparklet/patches/sparkconf"
	"github.com/sparklet/sparklet/vocab"
)

// The JVM's configuration is the pod's own sparklet.io/spark-conf, as the
// user wrote it, followed by sparklet.io/effective-conf, which holds only
// what the other layers set differently: the user's properties are stored
// once, so a large conf does not double the pod's annotations, which the
// API server caps at 256 KiB in total
// (k8s.io/apimachinery/pkg/api/validation.TotalAnnotationSizeLimitB).
// The conf init container writes both, in this order, after the image's
// spark-defaults.conf; java.util.Properties.load keeps the last value of a
// key, and a blank line ends a continuation the user's text may leave
// open (see sparkconf.Load).

// UserConfFile is the file, next to ConfFile in the conf init container's
// downward API volume, that holds the pod's sparklet.io/spark-conf.
const UserConfFile = "spark-conf"

// Headers of the two parts of DeliveredConf.
const (
	userConfHeader      = "# sparklet: annotation " + vocab.AnnotationSparkConf + ", as the pod sets it"
	effectiveConfHeader = "# sparklet: the effective configuration, which overrides the lines above"
)

// DeliveredConf is the text the conf init container appends to the
// image's spark-defaults.conf, from the pod's annotations: what the JVM
// reads, and what the sidecar checks against the digest the webhook took.
func DeliveredConf(annotations map[string]string) string {
	user, ok := annotations[vocab.AnnotationSparkConf]
	return deliveredConf(user, ok, annotations[vocab.AnnotationEffectiveConf])
}

func deliveredConf(user string, hasUser bool, effective string) string {
	var b strings.Builder
	if hasUser && user != "" {
		b.WriteString(userConfHeader + "\n" + user + "\n\n")
	}
	b.WriteString(effectiveConfHeader + "\n" + effective)
	return b.String()
}

// DeliveredDigest is the digest of the configuration a pod's JVM reads,
// which the sidecar checks against the one the webhook took: of
// DeliveredConf when the pod projects its sparklet.io/spark-conf to the
// conf init container, else of sparklet.io/effective-conf alone, all the
// JVM reads then (and all it read in pods injected before the user's conf
// was stored once). What the pod projects is fixed at creation.
func DeliveredDigest(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name != VolumeConf || v.DownwardAPI == nil {
			continue
		}
		for _, item := range v.DownwardAPI.Items {
			if item.Path == UserConfFile {
				return sparkconf.Digest(DeliveredConf(pod.Annotations))
			}
		}
	}
	return sparkconf.Digest(pod.Annotations[vocab.AnnotationEffectiveConf])
}

// EffectiveConf is the driver's effective Spark configuration, read from
// its annotations as the JVM reads DeliveredConf.
func EffectiveConf(annotations map[string]string) (map[string]string, error) {
	return sparkconf.Parse(DeliveredConf(annotations))
}

// changedFrom is the part of conf that user does not already set to the
// same value: what sparklet.io/effective-conf records.
func changedFrom(conf, user map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range conf {
		if u, ok := user[k]; !ok || u != v {
			out[k] = v
		}
	}
	return out
}

// refuseOversizedAnnotations refuses a pod whose annotations, sparklet's
// included, are over the API server's total, naming the largest.
func refuseOversizedAnnotations(pod *corev1.Pod) error {
	total := 0
	for k, v := range pod.Annotations {
		total += len(k) + len(v)
	}
	if total <= apivalidation.TotalAnnotationSizeLimitB {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(pod.Annotations), func(a, b string) int {
		return len(pod.Annotations[b]) + len(b) - len(pod.Annotations[a]) - len(a)
	})
	var largest []string
	for _, k := range keys[:min(3, len(keys))] {
		largest = append(largest, fmt.Sprintf("%s (%d bytes)", k, len(k)+len(pod.Annotations[k])))
	}
	return &Refused{Reason: "annotations-too-large", Message: fmt.Sprintf(
		"metadata.annotations: the injected pod's annotations would total %d bytes, over the API server's limit of %d "+
			"(TotalAnnotationSizeLimitB); the largest are %s; make %s smaller, for example by moving properties into "+
			"a conf directory of your own (SPARK_CONF_DIR), whose files sparklet copies",
		total, apivalidation.TotalAnnotationSizeLimitB, strings.Join(largest, ", "), vocab.AnnotationSparkConf)}
}
