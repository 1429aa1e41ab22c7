package patches

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sparklet/sparklet/fetch/spec"
	"github.com/sparklet/sparklet/policy"
)

// Status is recorded in the sparklet.io/status annotation of an injected pod.
type Status struct {
	Version        string   `json:"version"`
	AppID          string   `json:"appID"`
	SparkContainer string   `json:"sparkContainer"`
	InitContainers []string `json:"initContainers"`
	Volumes        []string `json:"volumes"`
	Env            []string `json:"env"`
	// RemovedVolumes are service-account token volumes sparklet took away
	// from the pod's own containers.
	RemovedVolumes []string `json:"removedVolumes,omitempty"`
}

// driver carries one driver pod through the steps.
type driver struct {
	pod     *corev1.Pod
	in      Input
	pol     *policy.Effective
	spark   int // index of the Spark container
	args    submitArgs
	user    map[string]string // the pod's sparklet.io/spark-conf
	conf    map[string]string // the effective configuration
	appID   string
	fetch   []spec.Entry
	volumes []string // volumes sparklet owns in this pod
	env     []string // env vars sparklet set on the Spark container
	removed []string // token volumes taken away from the pod's containers
}

// driverSteps run in order; each is idempotent.
var driverSteps = []struct {
	name string
	run  func(*driver) error
}{
	{"spark container", (*driver).findSparkContainer},
	{"host network", (*driver).refuseHostNetwork},
	{"reserved names", (*driver).refuseReservedNames},
	{"spark conf", (*driver).buildConf},
	{"limits", (*driver).checkLimits},
	{"images", (*driver).checkImages},
	{"fetch", (*driver).parseFetch},
	{"app id", (*driver).setAppID},
	{"policy", (*driver).applyPolicy},
	{"credentials", (*driver).applyCredentials},
	{"service account", (*driver).isolateServiceAccount},
	{"volumes", (*driver).addVolumes},
	{"env", (*driver).addEnv},
	{"init container", (*driver).addInitContainer},
	{"annotations", (*driver).annotate},
	{"sidecar", (*driver).addSidecar},
}

// Driver patches pod in place. It returns a non-empty skip reason when the
// pod is left alone (not a driver, opted out), a *Refused when policy forbids
// the pod, or another error for input it cannot handle.
func Driver(pod *corev1.Pod, in Input) (skipped string, err error) {
	if pod.Labels[LabelRole] != "driver" {
		return "not labelled spark-role=driver", nil
	}
	if v, ok := pod.Annotations[AnnotationInject]; ok && strings.EqualFold(v, "false") {
		return "opted out with annotation " + AnnotationInject + `: "false"`, nil
	}
	if in.Policy == nil {
		return "", fmt.Errorf("no policy")
	}
	ns := in.Namespace
	if ns == "" {
		ns = pod.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	in.Namespace = ns
	d := &driver{pod: pod, in: in, pol: in.Policy}
	for _, step := range driverSteps {
		if err := step.run(d); err != nil {
			return "", err
		}
	}
	return "", nil
}

// sparkContainerNames are the names that mark the Spark container, in order.
var sparkContainerNames = []string{"spark-kubernetes-driver", "driver", "spark"}

func (d *driver) findSparkContainer() error {
	i, err := findContainer(d.pod, sparkContainerNames)
	d.spark = i
	return err
}

// findContainer picks the Spark container: the one the annotation names,
// else the first of names present, else the only container.
func findContainer(pod *corev1.Pod, names []string) (int, error) {
	cs := pod.Spec.Containers
	if want, ok := pod.Annotations[AnnotationContainer]; ok {
		for i := range cs {
			if cs[i].Name == want {
				return i, nil
			}
		}
		return 0, &Refused{Reason: "no-spark-container", Message: fmt.Sprintf(
			"annotation %s names container %q, but the pod's containers are %s; fix the annotation",
			AnnotationContainer, want, listNames(cs))}
	}
	for _, n := range names {
		for i := range cs {
			if cs[i].Name == n {
				return i, nil
			}
		}
	}
	if len(cs) == 1 {
		return 0, nil
	}
	return 0, &Refused{Reason: "no-spark-container", Message: fmt.Sprintf(
		"cannot tell which container runs Spark among %s: name it %s, or annotate the pod with %s: <name>",
		listNames(cs), strings.Join(quoteAll(names), ", "), AnnotationContainer)}
}

func listNames(cs []corev1.Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = strconv.Quote(c.Name)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}

func (d *driver) container() *corev1.Container { return &d.pod.Spec.Containers[d.spark] }

func (d *driver) refuseHostNetwork() error {
	if d.pod.Spec.HostNetwork {
		return &Refused{Reason: "host-network", Message: "spec.hostNetwork: true is not allowed for Spark drivers: " +
			"the sidecar listens on 127.0.0.1, which would be the node's; remove hostNetwork"}
	}
	return nil
}

// refuseReservedNames refuses a first injection whose pod already uses a
// name sparklet injects; on an injected pod those are sparklet's own.
func (d *driver) refuseReservedNames() error {
	if _, injected := d.pod.Annotations[AnnotationStatus]; injected {
		return nil
	}
	for _, v := range d.pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "sparklet-") {
			return &Refused{Reason: "reserved-name", Message: fmt.Sprintf(
				"spec.volumes: the name %q is reserved for sparklet (prefix sparklet-); rename the volume", v.Name)}
		}
	}
	for _, c := range d.pod.Spec.InitContainers {
		if c.Name == SidecarName || c.Name == InitName {
			return &Refused{Reason: "reserved-name", Message: fmt.Sprintf(
				"spec.initContainers: the name %q is reserved for sparklet; rename the container", c.Name)}
		}
	}
	for _, e := range d.container().Env {
		if e.Name == "SPARK_CONF_DIR" {
			return &Refused{Reason: "spark-conf-dir", Message: fmt.Sprintf(
				"container %q sets SPARK_CONF_DIR, but sparklet delivers the Spark configuration through its own "+
					"SPARK_CONF_DIR (%s); remove the variable and put your properties in the %s annotation",
				d.container().Name, ConfDir, AnnotationSparkConf)}
		}
	}
	return nil
}

// sparkMasterURL is where the JVM's Kubernetes client finds the sidecar.
func (d *driver) sparkMasterURL() string {
	return fmt.Sprintf("k8s://http://127.0.0.1:%d", d.pol.Sidecar.Port)
}

// buildConf layers the Spark configuration: sparklet's defaults, policy
// defaults (cluster, then namespace), the pod's annotation, the pod's own
// --conf arguments, policy enforced values, then the values sparklet owns.
func (d *driver) buildConf() error {
	c := d.container()
	args, err := parseSubmitArgs(append(append([]string{}, c.Command...), c.Args...))
	if err != nil {
		return &Refused{Reason: "bad-args", Message: fmt.Sprintf("container %q: %v", c.Name, err)}
	}
	d.args = args
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
	d.user = map[string]string{}
	if text, ok := d.pod.Annotations[AnnotationSparkConf]; ok {
		if d.user, err = ParseSparkConf(text); err != nil {
			return &Refused{Reason: "bad-spark-conf", Message: fmt.Sprintf("annotation %s: %v", AnnotationSparkConf, err)}
		}
	}
	for _, src := range []struct {
		what string
		conf map[string]string
	}{{"annotation " + AnnotationSparkConf, d.user}, {fmt.Sprintf("container %q --conf", c.Name), args.conf}} {
		for _, k := range slices.Sorted(maps.Keys(src.conf)) {
			if why, ok := policy.Reserved[k]; ok {
				return &Refused{Reason: "reserved-key", Message: fmt.Sprintf("%s sets %s: %s; remove it", src.what, k, why)}
			}
			if want, ok := d.pol.Spark.Enforced[k]; ok && src.conf[k] != want {
				return &Refused{Reason: "enforced-key", Message: fmt.Sprintf(
					"%s sets %s=%s, but the sparklet policy enforces %s=%s in namespace %s; remove it or use the enforced value",
					src.what, k, src.conf[k], k, want, d.in.Namespace)}
			}
		}
	}

	conf := map[string]string{
		"spark.kubernetes.container.image": c.Image,
		// The sidecar creates executors with its own concurrency and rate
		// limits, so the JVM may ask in larger batches than Spark's 5 (3.5)
		// or 10 (4.0) per second.
		"spark.kubernetes.allocation.batch.size": strconv.Itoa(DefaultAllocationBatchSize),
	}
	if max := d.pol.Limits.MaxExecutors; max > 0 {
		conf["spark.dynamicAllocation.maxExecutors"] = strconv.Itoa(max)
	}
	for _, layer := range []map[string]string{d.pol.Spark.Defaults, d.user, args.conf, d.pol.Spark.Enforced} {
		for k, v := range layer {
			conf[k] = v
		}
	}
	d.conf = conf
	return nil
}

func (d *driver) checkLimits() error {
	lim := d.pol.Limits
	if lim.MaxExecutors > 0 {
		for _, k := range []string{"spark.executor.instances", "spark.dynamicAllocation.maxExecutors", "spark.dynamicAllocation.minExecutors", "spark.dynamicAllocation.initialExecutors"} {
			v, ok := d.conf[k]
			if !ok {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return &Refused{Reason: "bad-spark-conf", Message: fmt.Sprintf("%s=%q is not a whole number", k, v)}
			}
			if n > lim.MaxExecutors {
				return &Refused{Reason: "over-limit", Message: fmt.Sprintf(
					"%s=%d exceeds the policy limit limits.maxExecutors=%d in namespace %s; lower it", k, n, lim.MaxExecutors, d.in.Namespace)}
			}
		}
	}
	if err := d.checkExecutorConf(); err != nil {
		return err
	}
	return checkContainerLimits(d.container(), lim.Driver, "driver")
}

// checkExecutorConf checks the executor size the conf asks for, computed as
// Spark does: memory plus overhead (max(384MiB, factor x memory)).
func (d *driver) checkExecutorConf() error {
	lim := d.pol.Limits.Executor
	if v, ok := d.conf["spark.executor.cores"]; ok && lim.MaxCores != nil {
		q, err := resource.ParseQuantity(strings.TrimSpace(v))
		if err != nil {
			return &Refused{Reason: "bad-spark-conf", Message: fmt.Sprintf("spark.executor.cores=%q is not a number", v)}
		}
		if q.Cmp(*lim.MaxCores) > 0 {
			return &Refused{Reason: "over-limit", Message: fmt.Sprintf(
				"spark.executor.cores=%s exceeds the policy limit limits.executor.maxCores=%s; lower it", v, lim.MaxCores)}
		}
	}
	if lim.MaxMemory == nil {
		return nil
	}
	memMiB := int64(1024) // Spark's default spark.executor.memory
	if v, ok := d.conf["spark.executor.memory"]; ok {
		n, err := javaMiB(v)
		if err != nil {
			return &Refused{Reason: "bad-spark-conf", Message: "spark.executor.memory: " + err.Error()}
		}
		memMiB = n
	}
	overhead := max(int64(384), memMiB/10)
	if v, ok := d.conf["spark.executor.memoryOverhead"]; ok {
		n, err := javaMiB(v)
		if err != nil {
			return &Refused{Reason: "bad-spark-conf", Message: "spark.executor.memoryOverhead: " + err.Error()}
		}
		overhead = n
	}
	total := resource.NewQuantity((memMiB+overhead)<<20, resource.BinarySI)
	if total.Cmp(*lim.MaxMemory) > 0 {
		return &Refused{Reason: "over-limit", Message: fmt.Sprintf(
			"executors would use %dMi (spark.executor.memory plus overhead), over the policy limit limits.executor.maxMemory=%s; lower spark.executor.memory",
			memMiB+overhead, lim.MaxMemory)}
	}
	return nil
}

// checkContainerLimits refuses a container whose requests or limits exceed
// the policy's per-pod caps.
func checkContainerLimits(c *corev1.Container, lim policy.ResourceLimit, role string) error {
	for _, r := range []struct {
		name corev1.ResourceName
		max  *resource.Quantity
		key  string
	}{{corev1.ResourceCPU, lim.MaxCores, "maxCores"}, {corev1.ResourceMemory, lim.MaxMemory, "maxMemory"}} {
		if r.max == nil {
			continue
		}
		for _, list := range []struct {
			name string
			rl   corev1.ResourceList
		}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
			if q, ok := list.rl[r.name]; ok && q.Cmp(*r.max) > 0 {
				return &Refused{Reason: "over-limit", Message: fmt.Sprintf(
					"container %q resources.%s.%s=%s exceeds the policy limit limits.%s.%s=%s; lower it",
					c.Name, list.name, r.name, q.String(), role, r.key, r.max)}
			}
		}
	}
	return nil
}

func (d *driver) checkImages() error {
	c := d.container()
	if err := d.pol.CheckImage(c.Image); err != nil {
		return &Refused{Reason: "image-not-allowed", Message: fmt.Sprintf("container %q: %v", c.Name, err)}
	}
	for _, k := range []string{"spark.kubernetes.container.image", "spark.kubernetes.executor.container.image"} {
		if img, ok := d.conf[k]; ok {
			if err := d.pol.CheckImage(img); err != nil {
				return &Refused{Reason: "image-not-allowed", Message: fmt.Sprintf("%s: %v", k, err)}
			}
		}
	}
	return nil
}

func (d *driver) parseFetch() error {
	text, ok := d.pod.Annotations[spec.Annotation]
	if !ok {
		return nil
	}
	entries, err := spec.ParseAnnotation(text)
	if err != nil {
		return &Refused{Reason: "bad-fetch", Message: err.Error()}
	}
	if err := d.pol.CheckFetch(entries); err != nil {
		return &Refused{Reason: "fetch-not-allowed", Message: err.Error()}
	}
	d.fetch = entries
	for k, v := range spec.SparkConf(entries) {
		if have := d.conf[k]; have != "" && !strings.Contains(have, v) {
			v = have + "," + v
		}
		d.conf[k] = v
	}
	return nil
}

// setAppID keeps a valid spark-app-selector label (so reinvocation and
// re-injection keep the id) or generates one.
func (d *driver) setAppID() error {
	id := d.pod.Labels[LabelAppID]
	if id != "" {
		if msgs := validation.IsValidLabelValue(id); len(msgs) > 0 {
			return &Refused{Reason: "bad-app-id", Message: fmt.Sprintf(
				"label %s=%q is not a valid label value: %s", LabelAppID, id, strings.Join(msgs, "; "))}
		}
	} else if d.in.AppID != "" {
		id = d.in.AppID
	} else {
		b := make([]byte, 8)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("generate app id: %w", err)
		}
		id = "spark-" + hex.EncodeToString(b)
	}
	d.appID = id
	d.pod.Labels[LabelAppID] = id
	return nil
}

func (d *driver) applyPolicy() error {
	// The ServiceAccount admission plugin, which runs before webhooks, fills
	// in "default" for a pod that names no service account: treat it as unset.
	if sa := d.pol.Driver.Defaults.ServiceAccountName; sa != "" && d.pod.Spec.ServiceAccountName == "default" {
		d.pod.Spec.ServiceAccountName = sa
	}
	applySettings(d.pod, d.container(), d.pol.Driver.Defaults, false)
	applySettings(d.pod, d.container(), d.pol.Driver.Enforced, true)
	return nil
}

func (d *driver) applyCredentials() error {
	creds := d.pol.CredentialsFor("driver")
	applyCredentials(d.pod, d.container(), creds)
	for _, c := range creds {
		if c.MountPath != "" {
			d.volumes = append(d.volumes, VolumeCredPfx+c.Name)
		}
	}
	return nil
}

// isolateServiceAccount turns the pod-wide token off: only the sidecar gets
// a Kubernetes credential. The API server's ServiceAccount admission plugin
// runs before mutating webhooks, so the pod usually arrives with its
// kube-api-access-* token volume mounted into every container; that volume
// and its mounts are removed and recorded in the status.
func (d *driver) isolateServiceAccount() error {
	off := false
	d.pod.Spec.AutomountServiceAccountToken = &off
	if d.pod.Spec.ServiceAccountName == "" {
		d.pod.Spec.ServiceAccountName = "default"
	}
	vols := d.pod.Spec.Volumes[:0]
	for _, v := range d.pod.Spec.Volumes {
		if isAutoToken(v) {
			d.removed = append(d.removed, v.Name)
			continue
		}
		vols = append(vols, v)
	}
	d.pod.Spec.Volumes = vols
	for _, name := range d.removed {
		for _, list := range [][]corev1.Container{d.pod.Spec.InitContainers, d.pod.Spec.Containers} {
			for i := range list {
				list[i].VolumeMounts = dropMount(list[i].VolumeMounts, name)
			}
		}
	}
	return nil
}

// isAutoToken recognises the token volume the ServiceAccount admission
// plugin adds: kube-api-access-<suffix>, projected, with a token source.
func isAutoToken(v corev1.Volume) bool {
	if !strings.HasPrefix(v.Name, "kube-api-access-") || v.Projected == nil {
		return false
	}
	for _, src := range v.Projected.Sources {
		if src.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

func dropMount(mounts []corev1.VolumeMount, name string) []corev1.VolumeMount {
	out := mounts[:0]
	for _, m := range mounts {
		if m.Name != name {
			out = append(out, m)
		}
	}
	return out
}

func (d *driver) addVolumes() error {
	p := d.pod
	c := d.container()
	ownVolume := func(v corev1.Volume) {
		p.Spec.Volumes = upsert(p.Spec.Volumes, v, volumeName, true)
		d.volumes = append(d.volumes, v.Name)
	}
	mount := func(c *corev1.Container, m corev1.VolumeMount) {
		c.VolumeMounts = upsert(c.VolumeMounts, m, mountPath, true)
	}

	items := []corev1.DownwardAPIVolumeFile{{
		Path:     ConfFile,
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + AnnotationEffectiveConf + "']"},
	}}
	if d.fetch != nil {
		items = append(items, corev1.DownwardAPIVolumeFile{
			Path:     FetchFile,
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + spec.Annotation + "']"},
		})
	}
	ownVolume(corev1.Volume{Name: VolumeConf, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: items}}})
	mount(c, corev1.VolumeMount{Name: VolumeConf, MountPath: ConfDir, ReadOnly: true})

	tiny := resource.MustParse("1Mi")
	ownVolume(corev1.Volume{Name: VolumeJVM, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: &tiny}}})
	mount(c, corev1.VolumeMount{Name: VolumeJVM, MountPath: JVMDir, ReadOnly: true})

	expiry := d.pol.Sidecar.TokenExpirationSeconds
	ownVolume(corev1.Volume{Name: VolumeToken, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}}})

	for i := 1; i <= d.pol.LocalDirs.Count; i++ {
		name := fmt.Sprintf("%s%d", VolumeLocal, i)
		ownVolume(corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: d.pol.LocalDirs.Medium, SizeLimit: d.pol.LocalDirs.SizeLimit}}})
		mount(c, corev1.VolumeMount{Name: name, MountPath: LocalDirRoot + name})
	}
	if d.pol.HadoopConfigMap != "" {
		ownVolume(corev1.Volume{Name: VolumeHadoop, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: d.pol.HadoopConfigMap}}}})
		mount(c, corev1.VolumeMount{Name: VolumeHadoop, MountPath: HadoopConfDir, ReadOnly: true})
	}
	if d.fetch != nil {
		ownVolume(corev1.Volume{Name: VolumeDeps, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mount(c, corev1.VolumeMount{Name: VolumeDeps, MountPath: spec.MountPath})
	}
	return nil
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// addEnv sets what the JVM needs. The Spark conf refers to the pod name and
// IP through ${env:...}, which Spark resolves for ConfigEntry reads.
func (d *driver) addEnv() error {
	c := d.container()
	var localDirs []string
	for i := 1; i <= d.pol.LocalDirs.Count; i++ {
		localDirs = append(localDirs, fmt.Sprintf("%s%s%d", LocalDirRoot, VolumeLocal, i))
	}
	own := []corev1.EnvVar{
		fieldEnv("SPARKLET_POD_NAME", "metadata.name"),
		fieldEnv("SPARKLET_POD_IP", "status.podIP"),
		fieldEnv("SPARK_DRIVER_BIND_ADDRESS", "status.podIP"),
		{Name: "SPARK_CONF_DIR", Value: ConfDir},
		// fabric8 would otherwise pick up a kubeconfig or a service-account
		// token and send it to the sidecar (spark-fabric8-wire.md, 2g).
		{Name: "KUBERNETES_AUTH_TRYKUBECONFIG", Value: "false"},
		{Name: "KUBERNETES_AUTH_TRYSERVICEACCOUNT", Value: "false"},
	}
	if len(localDirs) > 0 {
		own = append(own, corev1.EnvVar{Name: "SPARK_LOCAL_DIRS", Value: strings.Join(localDirs, ",")})
	}
	if d.pol.HadoopConfigMap != "" {
		own = append(own, corev1.EnvVar{Name: "HADOOP_CONF_DIR", Value: HadoopConfDir})
	}
	for _, e := range own {
		c.Env = upsert(c.Env, e, envName, true)
		d.env = append(d.env, e.Name)
	}
	// With a proxy configured, the JVM must still reach the sidecar directly.
	for _, proxy := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		if !hasEnv(c.Env, proxy) {
			continue
		}
		for _, np := range []string{"NO_PROXY", "no_proxy"} {
			i := envIndex(c.Env, np)
			switch {
			case i < 0:
				c.Env = append(c.Env, corev1.EnvVar{Name: np, Value: "127.0.0.1"})
			case c.Env[i].ValueFrom == nil && !containsItem(c.Env[i].Value, "127.0.0.1"):
				c.Env[i].Value = strings.TrimPrefix(c.Env[i].Value+",127.0.0.1", ",")
			}
		}
		break
	}
	return nil
}

func hasEnv(env []corev1.EnvVar, name string) bool { return envIndex(env, name) >= 0 }

func envIndex(env []corev1.EnvVar, name string) int {
	for i := range env {
		if env[i].Name == name {
			return i
		}
	}
	return -1
}

func containsItem(list, item string) bool {
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == item {
			return true
		}
	}
	return false
}

func (d *driver) addInitContainer() error {
	if d.fetch == nil {
		return nil
	}
	pol, err := spec.Intersect(d.pol.Fetch...)
	if err != nil {
		return err
	}
	polJSON, err := spec.EncodePolicy(pol)
	if err != nil {
		return err
	}
	init := corev1.Container{
		Name:            InitName,
		Image:           d.pol.Sidecar.Image,
		ImagePullPolicy: d.pol.Sidecar.ImagePullPolicy,
		Args:            append([]string{"init"}, spec.InitArgs(PodInfoDir+"/"+FetchFile)...),
		Env:             []corev1.EnvVar{{Name: spec.PolicyEnv, Value: polJSON}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: VolumeConf, MountPath: PodInfoDir, ReadOnly: true},
			{Name: VolumeDeps, MountPath: spec.MountPath},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restrictedContext(),
	}
	// Appended, not inserted, so the pod's own init containers keep their
	// positions and the patch leaves them untouched.
	d.pod.Spec.InitContainers = upsertAt(d.pod.Spec.InitContainers, init, len(d.pod.Spec.InitContainers))
	return nil
}

// upsertAt replaces the container of the same name where it stands, or
// inserts it at index at.
func upsertAt(list []corev1.Container, c corev1.Container, at int) []corev1.Container {
	for i := range list {
		if list[i].Name == c.Name {
			list[i] = c
			return list
		}
	}
	if at > len(list) {
		at = len(list)
	}
	return append(list[:at], append([]corev1.Container{c}, list[at:]...)...)
}

func restrictedContext() *corev1.SecurityContext {
	yes, no := true, false
	uid := sidecarUID
	return &corev1.SecurityContext{
		RunAsNonRoot:             &yes,
		RunAsUser:                &uid,
		ReadOnlyRootFilesystem:   &yes,
		AllowPrivilegeEscalation: &no,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// addSidecar injects the sidecar as a native sidecar: an init container
// with restartPolicy Always, so the JVM starts only once it is ready and a
// Job's pod completes when the driver exits.
func (d *driver) addSidecar() error {
	pol, err := json.Marshal(d.pol)
	if err != nil {
		return fmt.Errorf("encode policy for the sidecar: %w", err)
	}
	always := corev1.ContainerRestartPolicyAlways
	metrics := intstrPort(d.pol.Sidecar.MetricsPort)
	sc := corev1.Container{
		Name:            SidecarName,
		Image:           d.pol.Sidecar.Image,
		ImagePullPolicy: d.pol.Sidecar.ImagePullPolicy,
		Args:            []string{"sidecar"},
		RestartPolicy:   &always,
		Env: []corev1.EnvVar{
			fieldEnv("SPARKLET_POD_NAME", "metadata.name"),
			fieldEnv("SPARKLET_POD_NAMESPACE", "metadata.namespace"),
			{Name: "SPARKLET_LISTEN", Value: fmt.Sprintf("127.0.0.1:%d", d.pol.Sidecar.Port)},
			{Name: "SPARKLET_METRICS_LISTEN", Value: fmt.Sprintf(":%d", d.pol.Sidecar.MetricsPort)},
			{Name: "SPARKLET_TOKEN_FILE", Value: TokenFile},
			{Name: "SPARKLET_SPARK_CONTAINER", Value: d.container().Name},
			{Name: "SPARKLET_POLICY", Value: string(pol)},
			// The JVM reads the conf from a pod annotation, which stays
			// editable; the sidecar refuses to start if it no longer matches.
			{Name: "SPARKLET_CONF_SHA256", Value: ConfDigest(d.pod.Annotations[AnnotationEffectiveConf])},
			// The Go runtime collects harder as the heap nears the
			// container's memory limit, instead of running into it: the
			// sidecar's memory grows with the executors it caches.
			{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1")}}},
		},
		Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: d.pol.Sidecar.MetricsPort, Protocol: corev1.ProtocolTCP}},
		StartupProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: metrics}},
			PeriodSeconds:    1,
			FailureThreshold: 120,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: metrics}},
			PeriodSeconds: 10,
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: VolumeJVM, MountPath: JVMDir},
			{Name: VolumeToken, MountPath: ServiceAccount, ReadOnly: true},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restrictedContext(),
	}
	if r := d.pol.Sidecar.Resources; r != nil {
		sc.Resources = *r.DeepCopy()
	}
	d.pod.Spec.InitContainers = upsertAt(d.pod.Spec.InitContainers, sc, len(d.pod.Spec.InitContainers))
	return nil
}

// annotate records the effective configuration, which the JVM reads through
// the downward API, and what was injected.
func (d *driver) annotate() error {
	d.conf["spark.master"] = d.sparkMasterURL()
	d.conf["spark.kubernetes.namespace"] = d.in.Namespace
	d.conf["spark.kubernetes.driver.pod.name"] = "${env:SPARKLET_POD_NAME}"
	d.conf["spark.driver.host"] = "${env:SPARKLET_POD_IP}"
	d.conf["spark.driver.bindAddress"] = "${env:SPARK_DRIVER_BIND_ADDRESS}"
	d.conf["spark.app.id"] = d.appID
	d.conf["spark.kubernetes.authenticate.oauthTokenFile"] = TokenFile
	if d.pod.Annotations == nil {
		d.pod.Annotations = map[string]string{}
	}
	d.pod.Annotations[AnnotationEffectiveConf] = RenderSparkConf(d.conf)

	inits := []string{SidecarName}
	// The status lists the init containers the sidecar step adds next.
	if d.fetch != nil {
		inits = []string{InitName, SidecarName}
	}
	sort.Strings(d.volumes)
	sort.Strings(d.env)
	status := Status{
		Version: d.in.Version, AppID: d.appID, SparkContainer: d.container().Name,
		InitContainers: inits, Volumes: d.volumes, Env: d.env, RemovedVolumes: d.removed,
	}
	// On re-injection there is nothing left to remove; keep the record.
	var old Status
	if json.Unmarshal([]byte(d.pod.Annotations[AnnotationStatus]), &old) == nil && len(d.removed) == 0 {
		status.RemovedVolumes = old.RemovedVolumes
	}
	st, err := json.Marshal(status)
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	d.pod.Annotations[AnnotationStatus] = string(st)
	return nil
}

// ConfDigest is the hex sha256 of a rendered effective configuration.
func ConfDigest(conf string) string {
	sum := sha256.Sum256([]byte(conf))
	return hex.EncodeToString(sum[:])
}
