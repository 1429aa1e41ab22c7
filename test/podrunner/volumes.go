package podrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volumes are a pod's volumes on this machine, one directory each under
// <pod dir>/volumes, bind-mounted into the containers by the shim.
type volumes struct {
	root   string
	paths  map[string]string // volume name to host path
	tmpfs  []string          // mounted tmpfs, unmounted at teardown
	tokens map[string]token  // "<volume>/<path>" to its token
	// readOnly marks the kinds the kubelet always mounts read-only.
	readOnly map[string]bool
}

type token struct {
	value   []byte
	issued  time.Time
	expires time.Time
}

func newVolumes(root string) *volumes {
	return &volumes{root: root, paths: map[string]string{}, tokens: map[string]token{}, readOnly: map[string]bool{}}
}

// sync creates the pod's volumes and refreshes the ones whose content comes
// from the API: ConfigMaps, Secrets, the downward API and tokens.
func (v *volumes) sync(ctx context.Context, r *Runner, pod *corev1.Pod) error {
	for _, vol := range pod.Spec.Volumes {
		if err := v.syncOne(ctx, r, pod, vol); err != nil {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
	}
	return nil
}

func (v *volumes) syncOne(ctx context.Context, r *Runner, pod *corev1.Pod, vol corev1.Volume) error {
	dir := filepath.Join(v.root, vol.Name)
	var files map[string]file
	var err error
	switch src := vol.VolumeSource; {
	case src.EmptyDir != nil:
		if _, ok := v.paths[vol.Name]; ok {
			return nil
		}
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o777); err != nil { // as the kubelet makes it
			return err
		}
		if src.EmptyDir.Medium == corev1.StorageMediumMemory {
			opts := "mode=1777"
			if l := src.EmptyDir.SizeLimit; l != nil && !l.IsZero() {
				opts += fmt.Sprintf(",size=%d", l.Value())
			}
			if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
				return fmt.Errorf("mount tmpfs: %w", err)
			}
			v.tmpfs = append(v.tmpfs, dir)
		}
		v.paths[vol.Name] = dir
		return nil
	case src.HostPath != nil:
		v.paths[vol.Name] = src.HostPath.Path
		return nil
	case src.ConfigMap != nil:
		files, err = configMapFiles(ctx, r, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, mode(src.ConfigMap.DefaultMode))
	case src.Secret != nil:
		files, err = secretFiles(ctx, r, pod.Namespace, src.Secret.SecretName, src.Secret.Items, src.Secret.Optional, mode(src.Secret.DefaultMode))
	case src.DownwardAPI != nil:
		files, err = downwardFiles(pod, src.DownwardAPI.Items, mode(src.DownwardAPI.DefaultMode), r.allocatable())
	case src.Projected != nil:
		files, err = v.projectedFiles(ctx, r, pod, vol.Name, src.Projected)
	default:
		return fmt.Errorf("this volume kind is not supported by the pod runner")
	}
	if err != nil {
		return err
	}
	if _, err := writeAtomic(dir, files); err != nil {
		return err
	}
	v.paths[vol.Name] = dir
	v.readOnly[vol.Name] = true
	return nil
}

// mode is a volume's defaultMode, 0644 when unset as the API defaults it.
func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

func itemMode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m)
}

// keyFiles maps data to files: every key, or only the listed items, where a
// listed key that is missing is an error unless the source is optional.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, optional bool, def os.FileMode, what string) (map[string]file, error) {
	files := map[string]file{}
	if len(items) == 0 {
		for k, d := range data {
			files[k] = file{d, def}
		}
		return files, nil
	}
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		files[it.Path] = file{d, itemMode(it.Mode, def)}
	}
	return files, nil
}

func configMapFiles(ctx context.Context, r *Runner, ns, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) (map[string]file, error) {
	cm, err := r.configMap(ctx, ns, name)
	if apierrors.IsNotFound(err) && isTrue(optional) {
		return map[string]file{}, nil
	}
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{}
	for k, s := range cm.Data {
		data[k] = []byte(s)
	}
	for k, b := range cm.BinaryData {
		data[k] = b
	}
	return keyFiles(data, items, isTrue(optional), def, "configMap "+ns+"/"+name)
}

func secretFiles(ctx context.Context, r *Runner, ns, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) (map[string]file, error) {
	s, err := r.secret(ctx, ns, name)
	if apierrors.IsNotFound(err) && isTrue(optional) {
		return map[string]file{}, nil
	}
	if err != nil {
		return nil, err
	}
	return keyFiles(s.Data, items, isTrue(optional), def, "secret "+ns+"/"+name)
}

func downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, def os.FileMode, allocatable corev1.ResourceList) (map[string]file, error) {
	files := map[string]file{}
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = metadataField(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			var c *corev1.Container
			if c, err = findContainer(pod, it.ResourceFieldRef.ContainerName); err == nil {
				value, err = resourceValue(it.ResourceFieldRef, c, allocatable)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", it.Path, err)
		}
		files[it.Path] = file{[]byte(value), itemMode(it.Mode, def)}
	}
	return files, nil
}

// projectedFiles merges a projected volume's sources into one set of files.
func (v *volumes) projectedFiles(ctx context.Context, r *Runner, pod *corev1.Pod, volName string, p *corev1.ProjectedVolumeSource) (map[string]file, error) {
	def := mode(p.DefaultMode)
	files := map[string]file{}
	for _, src := range p.Sources {
		var part map[string]file
		var err error
		switch {
		case src.ConfigMap != nil:
			part, err = configMapFiles(ctx, r, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, def)
		case src.Secret != nil:
			part, err = secretFiles(ctx, r, pod.Namespace, src.Secret.Name, src.Secret.Items, src.Secret.Optional, def)
		case src.DownwardAPI != nil:
			part, err = downwardFiles(pod, src.DownwardAPI.Items, def, r.allocatable())
		case src.ServiceAccountToken != nil:
			var t []byte
			t, err = v.token(ctx, r, pod, volName, src.ServiceAccountToken)
			part = map[string]file{src.ServiceAccountToken.Path: {t, def}}
		default:
			err = fmt.Errorf("this projection is not supported by the pod runner")
		}
		if err != nil {
			return nil, err
		}
		for k, f := range part {
			files[k] = f
		}
	}
	return files, nil
}

// token returns a service-account token bound to the pod, requested with
// the TokenRequest API and renewed, as the kubelet renews it, once 80% of
// its lifetime has passed.
func (v *volumes) token(ctx context.Context, r *Runner, pod *corev1.Pod, volName string, src *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	key := volName + "/" + src.Path
	if t, ok := v.tokens[key]; ok && time.Since(t.issued) < t.expires.Sub(t.issued)*8/10 {
		return t.value, nil
	}
	expiry := int64(3600)
	if src.ExpirationSeconds != nil {
		expiry = *src.ExpirationSeconds
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expiry,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	resp, err := r.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	t := token{value: []byte(resp.Status.Token), issued: time.Now(), expires: resp.Status.ExpirationTimestamp.Time}
	v.tokens[key] = t
	return t.value, nil
}

// mountsFor lists the host paths a container's volumeMounts bind, with
// subPath resolved inside the volume.
func (v *volumes) mountsFor(c *corev1.Container) ([]shimMount, error) {
	var out []shimMount
	for _, m := range c.VolumeMounts {
		src, ok := v.paths[m.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q names no volume of the pod", m.Name)
		}
		if m.SubPath != "" {
			if filepath.IsAbs(m.SubPath) || strings.Contains(m.SubPath, "..") {
				return nil, fmt.Errorf("volumeMount %q: subPath %q must be a relative path inside the volume", m.Name, m.SubPath)
			}
			src = filepath.Join(src, m.SubPath)
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o755); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, shimMount{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly || v.readOnly[m.Name]})
	}
	return out, nil
}

// teardown unmounts the memory-backed emptyDirs and removes the volumes.
func (v *volumes) teardown() error {
	for _, dir := range v.tmpfs {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	v.tmpfs = nil
	return os.RemoveAll(v.root)
}
