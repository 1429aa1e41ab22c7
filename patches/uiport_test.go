package patches

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// TestSparkMetrics: metrics.spark turns on the PrometheusServlet as Spark
// defaults the pod may override, and names the UI port spark-ui without
// touching a port the user declared.
func TestSparkMetrics(t *testing.T) {
	on := "limits: {maxExecutors: 5}\nmetrics: {spark: true}\n"
	for _, tc := range []struct {
		name   string
		policy string
		pod    *corev1.Pod
		ports  []corev1.ContainerPort
		conf   map[string]string // in the effective conf; "" means absent
	}{
		{"off", "limits: {maxExecutors: 5}\n", driverPod(), nil,
			map[string]string{"spark.metrics.conf.*.sink.prometheusServlet.class": "", "spark.ui.prometheus.enabled": ""}},
		{"on", on, driverPod(), []corev1.ContainerPort{{Name: UIPortName, ContainerPort: 4040, Protocol: corev1.ProtocolTCP}},
			map[string]string{"spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
				"spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus", "spark.ui.prometheus.enabled": "true"}},
		{"own ui port", on, driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.ui.port 4050\nspark.ui.prometheus.enabled false"}
		}), []corev1.ContainerPort{{Name: UIPortName, ContainerPort: 4050, Protocol: corev1.ProtocolTCP}},
			map[string]string{"spark.ui.prometheus.enabled": "false"}},
		{"ui off", on, driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.ui.enabled false"}
		}), nil, nil},
		{"port declared", on, driverPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "ui", ContainerPort: 4040}}
		}), []corev1.ContainerPort{{Name: "ui", ContainerPort: 4040}}, nil},
		{"namespace turns it off", on + "namespaces: {spark-jobs: {metrics: {spark: false}}}\n", driverPod(), nil,
			map[string]string{"spark.ui.prometheus.enabled": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod
			if skipped, err := inject(t, pod, mustPolicy(t, tc.policy)); err != nil || skipped != "" {
				t.Fatalf("inject: %q, %v", skipped, err)
			}
			var spark corev1.Container
			for _, c := range pod.Spec.Containers {
				if c.Name == "spark" {
					spark = c
				}
			}
			if !reflect.DeepEqual(spark.Ports, tc.ports) {
				t.Errorf("ports %+v, want %+v", spark.Ports, tc.ports)
			}
			conf, err := EffectiveConf(pod.Annotations)
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.conf {
				if got := conf[k]; got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			again := pod.DeepCopy()
			if _, err := inject(t, again, mustPolicy(t, tc.policy)); err != nil || !reflect.DeepEqual(again, pod) {
				t.Errorf("not idempotent: %v", err)
			}
		})
	}
}

func TestUIPort(t *testing.T) {
	for conf, want := range map[string]int32{
		"": 4040, "spark.ui.port=4050": 4050, "spark.ui.port=0": 0, "spark.ui.port=x": 0,
		"spark.ui.enabled=false": 0, "spark.ui.enabled=true": 4040,
	} {
		m := map[string]string{}
		if k, v, ok := strings.Cut(conf, "="); ok {
			m[k] = v
		}
		if got := UIPort(m); got != want {
			t.Errorf("UIPort(%q) = %d, want %d", conf, got, want)
		}
	}
}

func TestUIRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, policy, conf, ui, want string
	}{
		{"bad value", "limits: {}\n", "", "yes", `sparklet.io/ui: "yes" is neither "true" nor "false"`},
		{"random port", "limits: {}\n", "spark.ui.port 0", "true", "spark.ui.port is 0"},
		{"ui off, policy asks", "ui: {service: true}\n", "spark.ui.enabled false", "", "set sparklet.io/ui: \"false\""},
	} {
		pod := driverPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{vocab.AnnotationSparkConf: tc.conf}
			if tc.ui != "" {
				p.Annotations[vocab.AnnotationUI] = tc.ui
			}
		})
		_, err := inject(t, pod, mustPolicy(t, tc.policy))
		var refused *Refused
		if !errors.As(err, &refused) || refused.Reason != "bad-ui" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a bad-ui refusal saying %q", tc.name, err, tc.want)
		}
	}
	// Declining wins over a policy that asks, whatever the port.
	pod := driverPod(func(p *corev1.Pod) {
		p.Annotations = map[string]string{vocab.AnnotationSparkConf: "spark.ui.port 0", vocab.AnnotationUI: "false"}
	})
	if _, err := inject(t, pod, mustPolicy(t, "ui: {service: true}\n")); err != nil {
		t.Errorf("declined UI: %v", err)
	}
}
