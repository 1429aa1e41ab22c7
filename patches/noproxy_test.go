package patches

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

func TestNoProxyKeepsTheUsersExclusions(t *testing.T) {
	fromCM := &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "proxy"}, Key: "no-proxy"}}
	cases := []struct {
		name string
		env  []corev1.EnvVar
		want []corev1.EnvVar
	}{
		{"nothing set: the image's env stays in force", []corev1.EnvVar{{Name: "A", Value: "1"}}, []corev1.EnvVar{{Name: "A", Value: "1"}}},
		{"proxy only", []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}}, []corev1.EnvVar{
			{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "NO_PROXY", Value: "127.0.0.1"}, {Name: "no_proxy", Value: "127.0.0.1"}}},
		{"upper case list reaches lower case", []corev1.EnvVar{{Name: "NO_PROXY", Value: ".corp, 10.0.0.0/8"}}, []corev1.EnvVar{
			{Name: "NO_PROXY", Value: ".corp,10.0.0.0/8,127.0.0.1"}, {Name: "no_proxy", Value: ".corp,10.0.0.0/8,127.0.0.1"}}},
		{"both lists merge", []corev1.EnvVar{{Name: "no_proxy", Value: "a,127.0.0.1"}, {Name: "NO_PROXY", Value: "b"}}, []corev1.EnvVar{
			{Name: "no_proxy", Value: "b,a,127.0.0.1"}, {Name: "NO_PROXY", Value: "b,a,127.0.0.1"}}},
		{"from a ConfigMap", []corev1.EnvVar{{Name: "X", Value: "1"}, {Name: "NO_PROXY", ValueFrom: fromCM}}, []corev1.EnvVar{
			{Name: "SPARKLET_USER_NO_PROXY", ValueFrom: fromCM}, {Name: "X", Value: "1"},
			{Name: "NO_PROXY", Value: "$(SPARKLET_USER_NO_PROXY),127.0.0.1"}, {Name: "no_proxy", Value: "$(SPARKLET_USER_NO_PROXY),127.0.0.1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &corev1.Container{Env: tc.env}
			addNoProxy(c)
			if !reflect.DeepEqual(c.Env, tc.want) {
				t.Errorf("got  %+v\nwant %+v", c.Env, tc.want)
			}
			again := c.DeepCopy()
			addNoProxy(again)
			if !reflect.DeepEqual(again.Env, c.Env) {
				t.Errorf("not idempotent: %+v", again.Env)
			}
		})
	}
}

func TestJVMSkipsProxiesForTheSidecar(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	for name, tc := range map[string]struct{ conf, want string }{
		"alone":       {"", "-Dno.proxy=127.0.0.1"},
		"after yours": {"spark.driver.defaultJavaOptions -XX:+UseG1GC", "-XX:+UseG1GC -Dno.proxy=127.0.0.1"},
	} {
		pod := driverPod(func(p *corev1.Pod) { p.Annotations = map[string]string{vocab.AnnotationSparkConf: tc.conf} })
		if _, err := inject(t, pod, pol); err != nil {
			t.Fatal(err)
		}
		conf, err := EffectiveConf(pod.Annotations)
		if err != nil {
			t.Fatal(err)
		}
		if got := conf["spark.driver.defaultJavaOptions"]; got != tc.want {
			t.Errorf("%s: spark.driver.defaultJavaOptions = %q, want %q", name, got, tc.want)
		}
		if strings.Count(pod.Annotations[vocab.AnnotationEffectiveConf], "no.proxy") != 1 {
			t.Errorf("%s: no.proxy set more than once", name)
		}
	}
}
