package patches

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

func confInit(t *testing.T, pod *corev1.Pod) *corev1.Container {
	t.Helper()
	for i, c := range pod.Spec.InitContainers {
		if c.Name == ConfInitName {
			return &pod.Spec.InitContainers[i]
		}
	}
	t.Fatalf("no init container %s in %v", ConfInitName, pod.Spec.InitContainers)
	return nil
}

func TestConfInitRunsTheSparkImage(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	no := false
	pod := driverPod(func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.ImagePullPolicy = corev1.PullAlways
		c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &no}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "site", MountPath: "/opt/spark/conf"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "site", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	})
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	spark, init := pod.Spec.Containers[0], confInit(t, pod)
	if init.Image != spark.Image || init.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("conf init runs %s (%s), want the Spark container's %s (Always)", init.Image, init.ImagePullPolicy, spark.Image)
	}
	if !reflect.DeepEqual(init.SecurityContext, spark.SecurityContext) {
		t.Errorf("conf init security context %+v, want the Spark container's %+v", init.SecurityContext, spark.SecurityContext)
	}
	if len(init.Env) != 0 {
		t.Errorf("conf init env %v, want none: the image's SPARK_HOME decides", init.Env)
	}
	mounts := map[string]string{}
	for _, m := range init.VolumeMounts {
		mounts[m.MountPath] = m.Name
		if m.Name == VolumeToken || strings.HasPrefix(m.MountPath, ServiceAccount) {
			t.Errorf("conf init mounts a credential: %+v", m)
		}
	}
	want := map[string]string{PodInfoDir: VolumeConf, ConfDir: VolumeSpark, "/opt/spark/conf": "site"}
	if !reflect.DeepEqual(mounts, want) {
		t.Errorf("conf init mounts %v, want %v", mounts, want)
	}
	if i := envIndex(spark.Env, "SPARK_CONF_DIR"); i < 0 || spark.Env[i].Value != ConfDir {
		t.Errorf("Spark container SPARK_CONF_DIR not %s: %v", ConfDir, spark.Env)
	}
	for _, m := range spark.VolumeMounts {
		if m.MountPath == ConfDir && m.Name != VolumeSpark {
			t.Errorf("Spark container's %s is volume %s, want %s", ConfDir, m.Name, VolumeSpark)
		}
	}
	names := []string{}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	if want := []string{ConfInitName, SidecarName}; !reflect.DeepEqual(names, want) {
		t.Errorf("init containers %v, want %v", names, want)
	}
	if !strings.Contains(pod.Annotations[vocab.AnnotationStatus], `"`+ConfInitName+`"`) ||
		!strings.Contains(pod.Annotations[vocab.AnnotationStatus], `"`+VolumeSpark+`"`) {
		t.Errorf("status %s does not list %s", pod.Annotations[vocab.AnnotationStatus], ConfInitName)
	}
}

// The user's SPARK_CONF_DIR is where the conf init container copies from,
// on the first injection and on every reinvocation.
func TestConfInitKeepsUsersConfDir(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	for name, e := range map[string]corev1.EnvVar{
		"value": {Name: "SPARK_CONF_DIR", Value: "/etc/spark/conf"},
		"configMap": {Name: "SPARK_CONF_DIR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "site"}, Key: "confDir"}}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := driverPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SPARK_HOME", Value: "/spark"}, e}
			})
			if _, err := inject(t, pod, pol); err != nil {
				t.Fatal(err)
			}
			once := pod.DeepCopy()
			want := []corev1.EnvVar{{Name: "SPARK_HOME", Value: "/spark"}, e}
			want[1].Name = vocab.EnvImageConfDir
			if got := confInit(t, pod).Env; !reflect.DeepEqual(got, want) {
				t.Errorf("conf init env %v, want %v", got, want)
			}
			if _, err := inject(t, pod, pol); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(once, pod) {
				t.Errorf("reinjection changed the pod:\n%v\n%v", confInit(t, once), confInit(t, pod))
			}
		})
	}
}

// The script, run by /bin/sh over a made-up image conf directory, keeps
// every file and appends the effective conf after the image's defaults.
func TestConfScript(t *testing.T) {
	root := t.TempDir()
	image, dst, info := filepath.Join(root, "image"), filepath.Join(root, "dst"), filepath.Join(root, "podinfo")
	for dir, files := range map[string]map[string]string{
		image: {
			"spark-defaults.conf": "spark.executor.memory 4g\nspark.image.only yes\nspark.open.continuation a\\",
			"log4j2.properties":   "rootLogger.level = warn\n",
			"spark-env.sh":        "export FROM_IMAGE=1\n",
		},
		info: {ConfFile: "spark.executor.memory=512m\nspark.master=k8s://http://127.0.0.1:7000\n"},
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer(ConfDir, dst, PodInfoDir, info).Replace(confScript)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{vocab.EnvImageConfDir + "=" + image, "PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, name := range []string{"log4j2.properties", "spark-env.sh"} {
		got, _ := os.ReadFile(filepath.Join(dst, name))
		want, _ := os.ReadFile(filepath.Join(image, name))
		if string(got) != string(want) {
			t.Errorf("%s = %q, want the image's %q", name, got, want)
		}
	}
	text, err := os.ReadFile(filepath.Join(dst, ConfFile))
	if err != nil {
		t.Fatal(err)
	}
	// Last line wins, as java.util.Properties.load reads it; the open
	// continuation ends at the blank line.
	got := map[string]string{}
	for _, line := range strings.Split(string(text), "\n") {
		if k, v, ok := strings.Cut(strings.Replace(line, " ", "=", 1), "="); ok && !strings.HasPrefix(k, "#") {
			got[k] = v
		}
	}
	want := map[string]string{
		"spark.executor.memory":   "512m",
		"spark.image.only":        "yes",
		"spark.open.continuation": `a\`,
		"spark.master":            "k8s://http://127.0.0.1:7000",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spark-defaults.conf %v, want %v\n%s", got, want, text)
	}
	if !strings.Contains(string(text), "a\\\n\n") {
		t.Errorf("the image's open continuation is not closed by a blank line:\n%s", text)
	}
}

// Without a conf directory in the image, the effective conf alone is
// written.
func TestConfScriptNoImageConf(t *testing.T) {
	root := t.TempDir()
	dst, info := filepath.Join(root, "dst"), filepath.Join(root, "podinfo")
	for _, d := range []string{dst, info} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(info, ConfFile), []byte("spark.a=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer(ConfDir, dst, PodInfoDir, info).Replace(confScript)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"SPARK_HOME=" + filepath.Join(root, "nothing"), "PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	text, _ := os.ReadFile(filepath.Join(dst, ConfFile))
	if !strings.HasSuffix(string(text), "spark.a=1\n") || strings.Count(string(text), "spark.") != 1 {
		t.Errorf("spark-defaults.conf = %q, want the effective conf alone", text)
	}
}
