package patches

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sparklet/sparklet/fetch/spec"
	"github.com/sparklet/sparklet/vocab"
)

// addVolumes adds the volumes sparklet owns: the configuration, the JVM's
// token, the sidecar's Kubernetes credential, Spark's local dirs, the Hadoop
// configuration and the dependencies. Spark's local dirs are those
// planLocalDirs chose; the checks before refused a pod of which a mount
// would be replaced. The Spark container mounts all but
// the credential, which only the sidecar mounts.
func addVolumes(pod *corev1.Pod, p *plan, done *Status) error {
	c := p.container(pod)
	ownVolume := func(v corev1.Volume) {
		pod.Spec.Volumes = upsert(pod.Spec.Volumes, v, volumeName, true)
		done.Volumes = append(done.Volumes, v.Name)
	}
	mount := func(c *corev1.Container, m corev1.VolumeMount) {
		c.VolumeMounts = upsert(c.VolumeMounts, m, mountPath, true)
	}

	items := []corev1.DownwardAPIVolumeFile{{
		Path:     ConfFile,
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + vocab.AnnotationEffectiveConf + "']"},
	}}
	if _, ok := pod.Annotations[vocab.AnnotationSparkConf]; ok {
		items = append(items, corev1.DownwardAPIVolumeFile{
			Path:     UserConfFile,
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + vocab.AnnotationSparkConf + "']"},
		})
	}
	if p.fetch != nil {
		items = append(items, corev1.DownwardAPIVolumeFile{
			Path:     FetchFile,
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + vocab.AnnotationFetch + "']"},
		})
	}
	ownVolume(corev1.Volume{Name: VolumeConf, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: items}}})
	// The Spark container reads the image's conf directory merged with the
	// effective conf, which the conf init container writes (addConfInit).
	ownVolume(corev1.Volume{Name: VolumeSpark, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	mount(c, corev1.VolumeMount{Name: VolumeSpark, MountPath: ConfDir})

	tiny := resource.MustParse("1Mi")
	ownVolume(corev1.Volume{Name: VolumeJVM, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: &tiny}}})
	mount(c, corev1.VolumeMount{Name: VolumeJVM, MountPath: JVMDir, ReadOnly: true})

	expiry := p.pol.Sidecar.TokenExpirationSeconds
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

	for _, d := range p.localDirs {
		ownVolume(corev1.Volume{Name: d.volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: p.pol.LocalDirs.Medium, SizeLimit: p.pol.LocalDirs.SizeLimit}}})
		mount(c, corev1.VolumeMount{Name: d.volume, MountPath: d.path})
	}
	if p.pol.HadoopConfigMap != "" {
		ownVolume(corev1.Volume{Name: VolumeHadoop, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: p.pol.HadoopConfigMap}}}})
		mount(c, corev1.VolumeMount{Name: VolumeHadoop, MountPath: HadoopConfDir, ReadOnly: true})
	}
	if p.fetch != nil {
		ownVolume(corev1.Volume{Name: VolumeDeps, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mount(c, corev1.VolumeMount{Name: VolumeDeps, MountPath: spec.MountPath})
	}
	return nil
}
