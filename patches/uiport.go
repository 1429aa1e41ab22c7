package patches

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// UIPortName names the Spark container's UI port when the policy asks for
// Spark's metrics: the chart's PodMonitor scrapes the port by this name.
const UIPortName = "spark-ui"

// DefaultUIPort is Spark's spark.ui.port default.
const DefaultUIPort = 4040

// UIPort is the driver's Spark UI port from its effective configuration,
// or 0 when the UI is off or the port is not a fixed one (0 picks a free
// port at random).
func UIPort(conf map[string]string) int32 {
	if v, ok := conf["spark.ui.enabled"]; ok && v == "false" {
		return 0
	}
	v, ok := conf["spark.ui.port"]
	if !ok {
		return DefaultUIPort
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return 0
	}
	return int32(n)
}

// nameUIPort declares the UI port on the Spark container as spark-ui, when
// the policy asks for Spark's metrics. A port the container already
// declares with that number is left as the user wrote it.
func nameUIPort(pod *corev1.Pod, p *plan, _ *Status) error {
	port := UIPort(p.conf)
	if !p.pol.SparkMetrics || port == 0 {
		return nil
	}
	c := p.container(pod)
	for _, cp := range c.Ports {
		if cp.ContainerPort == port || cp.Name == UIPortName {
			return nil
		}
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: UIPortName, ContainerPort: port, Protocol: corev1.ProtocolTCP})
	return nil
}

// checkUI refuses a sparklet.io/ui annotation that is neither "true" nor
// "false", and a UI asked for with no fixed port to expose.
func checkUI(pod *corev1.Pod, p *plan) error {
	want := p.pol.UIService
	if v, ok := pod.Annotations[vocab.AnnotationUI]; ok {
		switch strings.ToLower(v) {
		case "true":
			want = true
		case "false":
			want = false
		default:
			return &Refused{Reason: "bad-ui", Message: fmt.Sprintf("annotation %s: %q is neither \"true\" nor \"false\"", vocab.AnnotationUI, v)}
		}
	}
	if want && UIPort(p.conf) == 0 {
		return &Refused{Reason: "bad-ui", Message: fmt.Sprintf(
			"a Spark UI Service was asked for (annotation %s or the policy's ui.service), but spark.ui.enabled is false or spark.ui.port is 0 (a random port), so there is no port to expose; set spark.ui.port, or set %s: \"false\"",
			vocab.AnnotationUI, vocab.AnnotationUI)}
	}
	return nil
}
