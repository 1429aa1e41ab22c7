package policy

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Reserved are the Spark properties sparklet sets itself; a policy, the pod
// annotation or the pod's args may not set them.
var Reserved = map[string]string{
	"spark.master":                                                "sparklet points it at the sidecar on 127.0.0.1",
	"spark.kubernetes.driver.pod.name":                            "sparklet sets it from the downward API",
	"spark.kubernetes.namespace":                                  "sparklet sets it to the pod's namespace",
	"spark.app.id":                                                "sparklet generates it and labels the pod with it",
	"spark.driver.host":                                           "sparklet sets it to the pod IP",
	"spark.driver.bindAddress":                                    "sparklet sets it to the pod IP",
	"spark.kubernetes.authenticate.oauthToken":                    "the JVM authenticates to the sidecar with sparklet's per-pod token",
	"spark.kubernetes.authenticate.oauthTokenFile":                "the JVM authenticates to the sidecar with sparklet's per-pod token",
	"spark.kubernetes.submitInDriver":                             "sparklet runs the driver in client mode",
	"spark.kubernetes.driver.master":                              "sparklet points it at the sidecar on 127.0.0.1",
	"spark.kubernetes.authenticate.driver.mounted.oauthToken":     "the JVM authenticates to the sidecar with sparklet's per-pod token",
	"spark.kubernetes.authenticate.driver.mounted.oauthTokenFile": "the JVM authenticates to the sidecar with sparklet's per-pod token",
}

// Validate checks the whole policy. The error lists every problem, each
// prefixed with the path of its field.
func (p *Policy) Validate() error {
	var v validator
	v.spark("spark", p.Spark)
	v.pod("driver.defaults", p.Driver.Defaults, false)
	v.pod("driver.enforced", p.Driver.Enforced, false)
	v.pod("executor.defaults", p.Executor.Defaults, true)
	v.pod("executor.enforced", p.Executor.Enforced, true)
	v.credentials("credentials", p.Credentials)
	v.limits("limits", p.Limits)
	v.images("allowedImages", p.AllowedImages)
	v.sidecar("sidecar", p.Sidecar)
	v.tokenContainers("tokenContainers", p.TokenContainers)
	for i, a := range p.APIServerAudiences {
		if strings.TrimSpace(a) == "" {
			v.add(fmt.Sprintf("apiServerAudiences[%d]", i), "empty: a projection without an audience is always the API server's; list only named audiences")
		}
	}
	v.mesh("mesh", p.Mesh)
	v.connect("connect", &p.Connect)
	v.uiIngress("ui.ingress", p.UI.Ingress)
	v.history("history", p.History)
	v.logs("logs", &p.Logs)
	v.scheduling("scheduling", p.Scheduling, schedulerNames(p.Driver, p.Executor))
	if p.LocalDirs.Count < 0 || p.LocalDirs.Count > 16 {
		v.add("localDirs.count", "must be between 0 and 16, got %d", p.LocalDirs.Count)
	}
	if p.LocalDirs.SizeLimit != nil && p.LocalDirs.SizeLimit.Sign() <= 0 {
		v.add("localDirs.sizeLimit", "must be positive, got %s", p.LocalDirs.SizeLimit)
	}
	if m := p.LocalDirs.Medium; m != "" && m != corev1.StorageMediumMemory && m != corev1.StorageMediumDefault {
		v.add("localDirs.medium", "must be \"\" or \"Memory\", got %q", m)
	}
	if p.HadoopConfigMap != "" {
		v.dnsSubdomain("hadoopConfigMap", p.HadoopConfigMap)
	}
	v.errs = append(v.errs, p.Fetch.Problems()...)
	for _, n := range slices.Sorted(maps.Keys(p.Namespaces)) {
		ns := p.Namespaces[n]
		at := "namespaces." + n
		for _, msg := range validation.IsDNS1123Label(n) {
			v.add(at, "not a namespace name: %s", msg)
		}
		v.spark(at+".spark", ns.Spark)
		v.pod(at+".driver.defaults", ns.Driver.Defaults, false)
		v.pod(at+".driver.enforced", ns.Driver.Enforced, false)
		v.pod(at+".executor.defaults", ns.Executor.Defaults, true)
		v.pod(at+".executor.enforced", ns.Executor.Enforced, true)
		v.credentials(at+".credentials", ns.Credentials)
		v.limits(at+".limits", ns.Limits)
		v.images(at+".allowedImages", ns.AllowedImages)
		v.connect(at+".connect", ns.Connect)
		if ns.UI != nil {
			v.uiIngress(at+".ui.ingress", ns.UI.Ingress)
		}
		v.history(at+".history", ns.History)
		v.logs(at+".logs", ns.Logs)
		if ns.Scheduling != nil && p.Scheduling.Enforce && ns.Scheduling.BatchScheduler != p.Scheduling.BatchScheduler {
			v.add(at+".scheduling.batchScheduler", "%q, but the cluster's scheduling enforces %q; set it to %q or remove it", ns.Scheduling.BatchScheduler, p.Scheduling.BatchScheduler, p.Scheduling.BatchScheduler)
		}
		if ns.Scheduling != nil {
			v.scheduling(at+".scheduling", *ns.Scheduling, schedulerNames(p.Driver, p.Executor, ns.Driver, ns.Executor))
		}
		if ns.Fetch != nil {
			for _, problem := range ns.Fetch.Problems() {
				v.errs = append(v.errs, at+"."+problem)
			}
		}
	}
	v.lentAccounts(p)
	if len(v.errs) == 0 {
		return nil
	}
	return &Error{Problems: v.errs}
}

// lentAccounts refuses Spark keys that would run executors as a driver
// ServiceAccount of the policy: Spark gives executors
// spark.kubernetes.authenticate.executor.serviceAccountName, else
// spark.kubernetes.authenticate.driver.serviceAccountName.
func (v *validator) lentAccounts(p *Policy) {
	drivers := []string{p.Driver.Defaults.ServiceAccountName, p.Driver.Enforced.ServiceAccountName}
	sections := map[string]SparkConf{"spark": p.Spark, "connect.spark": p.Connect.Spark}
	for n, ns := range p.Namespaces {
		drivers = append(drivers, ns.Driver.Defaults.ServiceAccountName, ns.Driver.Enforced.ServiceAccountName)
		sections["namespaces."+n+".spark"] = ns.Spark
		if ns.Connect != nil {
			sections["namespaces."+n+".connect.spark"] = ns.Connect.Spark
		}
	}
	for _, at := range slices.Sorted(maps.Keys(sections)) {
		for _, layer := range []struct {
			name string
			conf map[string]string
		}{{"defaults", sections[at].Defaults}, {"enforced", sections[at].Enforced}} {
			for _, k := range []string{"spark.kubernetes.authenticate.executor.serviceAccountName", "spark.kubernetes.authenticate.driver.serviceAccountName"} {
				if sa := layer.conf[k]; sa != "" && slices.Contains(drivers, sa) {
					v.add(at+"."+layer.name+"."+k, "%q is a driver ServiceAccount of this policy, and executors would run as it "+
						"(Spark gives them this key's account); name another ServiceAccount, or remove the key", sa)
				}
			}
		}
	}
}

type validator struct{ errs []string }

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, field+": "+fmt.Sprintf(format, args...))
}

func (v *validator) spark(at string, c SparkConf) {
	for _, section := range []struct {
		name string
		conf map[string]string
	}{{"defaults", c.Defaults}, {"enforced", c.Enforced}} {
		for _, k := range slices.Sorted(maps.Keys(section.conf)) {
			field := at + "." + section.name + "." + k
			if !strings.HasPrefix(k, "spark.") {
				v.add(field, "Spark properties start with \"spark.\"")
			}
			if why, ok := Reserved[k]; ok {
				v.add(field, "reserved: %s; remove it from the policy", why)
			}
			if k == "spark.kubernetes.allocation.pods.allocator" && strings.TrimSpace(section.conf[k]) != "direct" {
				v.add(field, "%q: only the direct allocator works with sparklet (the others have a controller create the executors, past the sidecar)", section.conf[k])
			}
		}
	}
}

func (v *validator) pod(at string, s PodSettings, executor bool) {
	for _, e := range podFieldErrors(at, s) {
		v.errs = append(v.errs, e.Error())
	}
	seen := map[string]bool{}
	for i, e := range s.Env {
		field := fmt.Sprintf("%s.env[%d]", at, i)
		if e.Name == "" {
			v.add(field+".name", "required")
		}
		for _, msg := range validation.IsEnvVarName(e.Name) {
			v.add(field+".name", "%q: %s", e.Name, msg)
		}
		if seen[e.Name] {
			v.add(field+".name", "%q appears twice", e.Name)
		}
		seen[e.Name] = true
	}
	vols := map[string]bool{}
	for i, vol := range s.Volumes {
		field := fmt.Sprintf("%s.volumes[%d].name", at, i)
		for _, msg := range validation.IsDNS1123Label(vol.Name) {
			v.add(field, "%q: %s", vol.Name, msg)
		}
		if vols[vol.Name] {
			v.add(field, "%q appears twice", vol.Name)
		}
		vols[vol.Name] = true
		if strings.HasPrefix(vol.Name, "sparklet-") || strings.HasPrefix(vol.Name, "spark-local-dir-") {
			v.add(field, "%q: names starting with sparklet- or spark-local-dir- belong to sparklet", vol.Name)
		}
		if vol.HostPath != nil {
			if what := HostPathReaches(vol.HostPath.Path); what != "" {
				v.add(fmt.Sprintf("%s.volumes[%d].hostPath.path", at, i), "%q %s, from which a container could read the service-account "+
					"tokens of the node's pods, the driver sidecar's among them; mount a narrower host directory", vol.HostPath.Path, what)
			}
		}
	}
	for i, m := range s.VolumeMounts {
		field := fmt.Sprintf("%s.volumeMounts[%d]", at, i)
		if m.Name == "" || m.MountPath == "" {
			v.add(field, "name and mountPath are required")
		}
		if !path.IsAbs(m.MountPath) {
			v.add(field+".mountPath", "%q must be an absolute path", m.MountPath)
		}
	}
	v.labels(at+".labels", s.Labels, true)
	v.labels(at+".annotations", s.Annotations, false)
	for _, k := range slices.Sorted(maps.Keys(s.NodeSelector)) {
		v.labelPair(at+".nodeSelector", k, s.NodeSelector[k], true)
	}
	if s.ServiceAccountName != "" {
		v.dnsSubdomain(at+".serviceAccountName", s.ServiceAccountName)
		if executor {
			v.add(at+".serviceAccountName", "executors run without a Kubernetes credential; set it under driver instead")
		}
	}
	if s.AllowHostPath != nil && !executor {
		v.add(at+".allowHostPath", "only applies to executor pods; drivers with hostPath volumes are the user's own")
	}
	for i, s := range s.ImagePullSecrets {
		if s.Name == "" {
			v.add(fmt.Sprintf("%s.imagePullSecrets[%d].name", at, i), "required")
		}
	}
}

func (v *validator) labels(at string, m map[string]string, isLabel bool) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v.labelPair(at, k, m[k], isLabel)
	}
}

func (v *validator) labelPair(at, k, val string, isLabel bool) {
	for _, msg := range validation.IsQualifiedName(k) {
		v.add(at+"."+k, "key: %s", msg)
	}
	if isLabel {
		for _, msg := range validation.IsValidLabelValue(val) {
			v.add(at+"."+k, "value %q: %s", val, msg)
		}
	}
}

func (v *validator) credentials(at string, creds []Credential) {
	seen := map[string]bool{}
	for i, c := range creds {
		field := fmt.Sprintf("%s[%d]", at, i)
		if c.Name == "" {
			v.add(field+".name", "required")
		}
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			if c.Name != "" {
				v.add(field+".name", "%q: %s", c.Name, msg)
			}
		}
		if seen[c.Name] {
			v.add(field+".name", "%q appears twice", c.Name)
		}
		seen[c.Name] = true
		if c.SecretName == "" {
			v.add(field+".secretName", "required: the Secret in the pod's namespace to read")
		} else {
			v.dnsSubdomain(field+".secretName", c.SecretName)
		}
		if len(c.Env) == 0 && c.MountPath == "" {
			v.add(field, "set env, mountPath or both; otherwise the credential exposes nothing")
		}
		if c.MountPath != "" && !path.IsAbs(c.MountPath) {
			v.add(field+".mountPath", "%q must be an absolute path", c.MountPath)
		}
		for j, e := range c.Env {
			ef := fmt.Sprintf("%s.env[%d]", field, j)
			for _, msg := range validation.IsEnvVarName(e.Name) {
				v.add(ef+".name", "%q: %s", e.Name, msg)
			}
			if e.Key == "" {
				v.add(ef+".key", "required: the key in Secret %q", c.SecretName)
			}
		}
		for j, to := range c.To {
			if to != "driver" && to != "executor" {
				v.add(fmt.Sprintf("%s.to[%d]", field, j), "must be \"driver\" or \"executor\", got %q", to)
			}
		}
	}
}

func (v *validator) limits(at string, l Limits) {
	if l.MaxExecutors < 0 {
		v.add(at+".maxExecutors", "must not be negative, got %d", l.MaxExecutors)
	}
	for _, r := range []struct {
		name string
		lim  ResourceLimit
	}{{"driver", l.Driver}, {"executor", l.Executor}} {
		if r.lim.MaxCores != nil && r.lim.MaxCores.Sign() <= 0 {
			v.add(at+"."+r.name+".maxCores", "must be positive, got %s", r.lim.MaxCores)
		}
		if r.lim.MaxMemory != nil && r.lim.MaxMemory.Sign() <= 0 {
			v.add(at+"."+r.name+".maxMemory", "must be positive, got %s", r.lim.MaxMemory)
		}
		if r.lim.MaxPVCSize != nil && r.lim.MaxPVCSize.Sign() <= 0 {
			v.add(at+"."+r.name+".maxPVCSize", "must be positive, got %s", r.lim.MaxPVCSize)
		}
	}
	if l.Driver.MaxPVCSize != nil {
		v.add(at+".driver.maxPVCSize", "PVC growth is for executors' PVCs only; move it to %s.executor.maxPVCSize", at)
	}
}

func (v *validator) images(at string, patterns []string) {
	for i, p := range patterns {
		if p == "" {
			v.add(fmt.Sprintf("%s[%d]", at, i), "empty pattern")
			continue
		}
		if _, err := path.Match(normalizePattern(p), ""); err != nil {
			v.add(fmt.Sprintf("%s[%d]", at, i), "%q is not a valid pattern (path.Match syntax: *, ?, [a-z])", p)
		}
	}
}

func (v *validator) sidecar(at string, s Sidecar) {
	v.connectAccess(at+".connectAccess", s.ConnectAccess)
	if s.Image == "" {
		v.add(at+".image", "required")
	}
	if len(s.Command) == 0 || s.Command[0] == "" {
		v.add(at+".command", "must name the sidecar's executable in its image: [/sparklet-sidecar] in sparklet's, [/sparklet] in an image with only that")
	}
	switch s.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		v.add(at+".imagePullPolicy", "must be Always, IfNotPresent or Never, got %q", s.ImagePullPolicy)
	}
	for _, p := range []struct {
		name string
		port int32
	}{{"port", s.Port}, {"metricsPort", s.MetricsPort}} {
		if p.port < 1024 || p.port > 65535 {
			v.add(at+"."+p.name, "must be between 1024 and 65535, got %d", p.port)
		}
		if p.port == 4040 || p.port == 7078 || p.port == 7079 {
			v.add(at+"."+p.name, "%d is one of Spark's own ports (4040, 7078, 7079)", p.port)
		}
	}
	if s.Port == s.MetricsPort {
		v.add(at+".metricsPort", "must differ from sidecar.port (%d)", s.Port)
	}
	if s.CreateQPS < 0 {
		v.add(at+".createQPS", "must not be negative")
	}
	if s.CreateConcurrency < 0 {
		v.add(at+".createConcurrency", "must not be negative")
	}
	if s.TokenExpirationSeconds != 0 && s.TokenExpirationSeconds < 600 {
		v.add(at+".tokenExpirationSeconds", "must be at least 600 (the kubelet's minimum), got %d", s.TokenExpirationSeconds)
	}
	for _, r := range []struct {
		name string
		r    *corev1.ResourceRequirements
	}{{"resources", s.Resources}, {"confResources", s.ConfResources}} {
		for _, name := range requestsOverLimits(r.r) {
			req, lim := r.r.Requests[name], r.r.Limits[name]
			v.add(at+"."+r.name+".requests."+string(name), "%s is above the %s limit %s; make it at most that", req.String(), name, lim.String())
		}
	}
	if s.ExecutorScheduleDeadlineSeconds < 0 {
		v.add(at+".executorScheduleDeadlineSeconds", "must not be negative, got %d (0 or absent: %d)", s.ExecutorScheduleDeadlineSeconds, DefaultScheduleDeadline)
	}
}

func (v *validator) dnsSubdomain(at, name string) {
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		v.add(at, "%q: %s", name, msg)
	}
}

// tokenContainers checks the names of the containers that keep the pod's
// service-account token: container names, never sparklet's own.
func (v *validator) tokenContainers(at string, names []string) {
	for i, n := range names {
		field := fmt.Sprintf("%s[%d]", at, i)
		for _, msg := range validation.IsDNS1123Label(n) {
			v.add(field, "not a container name: %s", msg)
		}
		if n == "sparklet-sidecar" || n == "sparklet-init" {
			v.add(field, "%q is sparklet's own container; list only the pod's containers that need the token, such as Argo's init and wait", n)
		}
	}
}
