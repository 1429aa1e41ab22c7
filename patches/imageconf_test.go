package patches

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
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
	want := map[string]string{PodInfoDir: VolumeConf, ConfDir: VolumeSpark, JVMDir: VolumeJVM, "/opt/spark/conf": "site"}
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
	if want := []string{SidecarName, ConfInitName}; !reflect.DeepEqual(names, want) {
		t.Errorf("init containers %v, want %v", names, want)
	}
	if !strings.Contains(pod.Annotations[vocab.AnnotationStatus], `"`+ConfInitName+`"`) ||
		!strings.Contains(pod.Annotations[vocab.AnnotationStatus], `"`+VolumeSpark+`"`) {
		t.Errorf("status %s does not list %s", pod.Annotations[vocab.AnnotationStatus], ConfInitName)
	}
}

// The conf container has the policy's sidecar.confResources, and the
// built-in ones when the policy is silent.
func TestConfInitResourcesFromThePolicy(t *testing.T) {
	for _, tc := range []struct{ name, policy, want string }{
		{"built in", testPolicy, "cpu 10m, memory 16Mi / cpu 500m, memory 64Mi"},
		{"the policy's", testPolicy + "\nsidecar:\n  confResources: {requests: {cpu: 50m, memory: 24Mi}, limits: {cpu: 500m, memory: 48Mi}}\n",
			"cpu 50m, memory 24Mi / cpu 500m, memory 48Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := driverPod()
			if _, err := inject(t, pod, mustPolicy(t, tc.policy)); err != nil {
				t.Fatal(err)
			}
			r := confInit(t, pod).Resources
			if got := resourceText(r.Requests) + " / " + resourceText(r.Limits); got != tc.want {
				t.Errorf("conf container resources %s, want %s", got, tc.want)
			}
		})
	}
}

// resourceText is "cpu 10m, memory 16Mi", sorted by name.
func resourceText(l corev1.ResourceList) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		parts = append(parts, string(name)+" "+q.String())
	}
	return strings.Join(parts, ", ")
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
	script := strings.NewReplacer(ConfDir, dst, PodInfoDir, info, ServingFile, servingFile(t, true)).Replace(confScript)
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
	script := strings.NewReplacer(ConfDir, dst, PodInfoDir, info, ServingFile, servingFile(t, true)).Replace(confScript)
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

// servingFile is a path for the sidecar's serving file in a new directory,
// written when it is to be there from the start.
func servingFile(t *testing.T, written bool) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "serving")
	if written {
		if err := os.WriteFile(f, []byte("127.0.0.1:7000"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// fakeCommands writes shell scripts named by the keys into a new directory
// and returns it, for the front of PATH.
func fakeCommands(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The JVM waits for the sidecar: the conf container copies the conf
// while the sidecar starts, then polls for the file the sidecar writes
// once it serves, and only then writes the file the hook waits for. Here
// the fake sleep is the sidecar, writing the file on its first call.
func TestConfScriptWaitsForSidecar(t *testing.T) {
	dst, info := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(info, ConfFile), []byte("spark.a=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	serving := servingFile(t, false)
	slept, conf := filepath.Join(t.TempDir(), "slept"), filepath.Join(dst, ConfFile)
	// The sleep records whether the conf was written when it was called.
	bin := fakeCommands(t, map[string]string{"sleep": fmt.Sprintf("if [ -e %s ]; then echo \"$1 copied\"; else echo \"$1\"; fi >> %s\ntouch %s\n", conf, slept, serving)})
	script := strings.NewReplacer(ConfDir, dst, PodInfoDir, info, ServingFile, serving).Replace(confOnce(&plan{}))
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"SPARK_HOME=" + t.TempDir(), "PATH=" + bin + ":/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, _ := os.ReadFile(slept); string(got) != "0.005 copied\n" {
		t.Errorf("the script slept %q, want once for 0.005 s, after the copy, until the serving file was there", got)
	}
	if text, _ := os.ReadFile(conf); !strings.HasSuffix(string(text), "spark.a=1\n") {
		t.Errorf("spark-defaults.conf = %q, want the effective conf", text)
	}
	if _, err := os.Stat(filepath.Join(dst, filepath.Base(ConfReadyFile))); err != nil {
		t.Errorf("no ready file for the hook after the sidecar served: %v", err)
	}
}

// A sidecar slow to serve is waited for as long as it takes, polled every
// 50 ms after the first 100 tries of 5 ms, with a line in the log every
// 30 s that sends the user to the sidecar's log: the fake date moves 31 s
// at each call, and the fake sleep, the sidecar, writes the serving file
// at its 103rd call, the third of the slow tries.
func TestConfScriptWaitsOnASlowSidecar(t *testing.T) {
	dst, info := t.TempDir(), t.TempDir()
	clock, naps := filepath.Join(t.TempDir(), "clock"), filepath.Join(t.TempDir(), "naps")
	serving := servingFile(t, false)
	bin := fakeCommands(t, map[string]string{
		"date":  fmt.Sprintf("echo x >> %[1]s; echo $(( 1000000 + 31 * $(wc -l < %[1]s) ))\n", clock),
		"sleep": fmt.Sprintf("echo \"$1\" >> %[1]s; if [ $(wc -l < %[1]s) -ge 103 ]; then echo 127.0.0.1:7000 > %[2]s; fi\n", naps, serving),
	})
	if err := os.WriteFile(filepath.Join(info, ConfFile), []byte("spark.a=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer(ConfDir, dst, PodInfoDir, info, ServingFile, serving).Replace(confOnce(&plan{}))
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"SPARK_HOME=" + t.TempDir(), "PATH=" + bin + ":/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the script failed while the sidecar was slow: %v: %s", err, out)
	}
	for _, want := range []string{"waiting 30s so far for the sidecar (init container " + SidecarName + ")", "waiting 60s so far"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the log does not say %q:\n%s", want, out)
		}
	}
	naps100, _ := os.ReadFile(naps)
	if want := strings.Repeat("0.005\n", 100) + strings.Repeat("0.05\n", 3); string(naps100) != want {
		t.Errorf("the script slept %q, want 100 times 0.005 s, then 0.05 s", naps100)
	}
	if _, err := os.Stat(filepath.Join(dst, filepath.Base(ConfReadyFile))); err != nil {
		t.Errorf("no ready file once the sidecar served: %v", err)
	}
}

// The copy runs again alike: a conf container restarted after it and
// before the sidecar served writes the same files, with no layer twice,
// whether or not the image has spark-defaults.conf and spark-env.sh.
func TestConfCopyRunsAgainAlike(t *testing.T) {
	for _, imageFiles := range []bool{false, true} {
		image, dst, info := t.TempDir(), t.TempDir(), t.TempDir()
		files := map[string]string{filepath.Join(info, ConfFile): "spark.a=1\n", filepath.Join(info, UserConfFile): "spark.b=2\n"}
		if imageFiles {
			files[filepath.Join(image, ConfFile)] = "spark.image yes\n"
			files[filepath.Join(image, "spark-env.sh")] = "IMAGE_ENV=1\n"
		}
		for path, text := range files {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		script := strings.NewReplacer(ConfDir, dst, PodInfoDir, info).Replace(confScript + connectEnvScript(&plan{connectJVMToken: true}))
		run := func() map[string]string {
			cmd := exec.Command("/bin/sh", "-c", script)
			cmd.Env = []string{vocab.EnvImageConfDir + "=" + image, "PATH=/usr/bin:/bin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			got := map[string]string{}
			for _, name := range []string{ConfFile, "spark-env.sh"} {
				text, err := os.ReadFile(filepath.Join(dst, name))
				if err != nil {
					t.Fatal(err)
				}
				got[name] = string(text)
			}
			return got
		}
		first, second := run(), run()
		for name, text := range first {
			if second[name] != text {
				t.Errorf("image files %v: %s changed when the copy ran again:\n%s\nwas:\n%s", imageFiles, name, second[name], text)
			}
		}
		if n := strings.Count(first[ConfFile], "spark.b=2"); n != 1 {
			t.Errorf("image files %v: the user's conf %d times in spark-defaults.conf:\n%s", imageFiles, n, first[ConfFile])
		}
		if imageFiles && !strings.HasPrefix(first[ConfFile], "spark.image yes") || imageFiles && !strings.HasPrefix(first["spark-env.sh"], "IMAGE_ENV=1") {
			t.Errorf("the image's own files are not first: %q", first)
		}
	}
}

// A pod injected by an earlier sparklet, with the conf init container
// before the sidecar, gets it after the sidecar when injected again:
// before it, it would wait for a sidecar the kubelet has not started.
func TestConfInitMovesAfterSidecar(t *testing.T) {
	pol := mustPolicy(t, testPolicy)
	pod := driverPod()
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	ics := pod.Spec.InitContainers
	slices.Reverse(ics)
	if ics[0].Name != ConfInitName {
		t.Fatalf("init containers %v: the test needs the conf init container first", ics)
	}
	if _, err := inject(t, pod, pol); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	if want := []string{SidecarName, ConfInitName}; !reflect.DeepEqual(names, want) {
		t.Errorf("init containers %v, want %v", names, want)
	}
}
