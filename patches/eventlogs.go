package patches

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Where the JVM writes its event logs, where the sidecar finds the
// history store's credential, and where it mounts a history claim
// (docs/event-logs.md).
const (
	VolumeEventLogs      = "sparklet-event-logs"
	VolumeHistoryCred    = "sparklet-history-credential"
	VolumeHistoryStore   = "sparklet-history-store"
	EventLogDir          = "/var/sparklet/event-logs"
	HistoryCredentialDir = "/var/run/secrets/sparklet-history"
	HistoryVolumeDir     = "/var/sparklet/history-store"
)

// The Spark properties of event logging (core/.../internal/config/package.scala,
// 3.5.9 to 4.3.0).
const (
	keyEventLogEnabled     = "spark.eventLog.enabled"
	keyEventLogDir         = "spark.eventLog.dir"
	keyEventLogRolling     = "spark.eventLog.rolling.enabled"
	keyEventLogRollingSize = "spark.eventLog.rolling.maxFileSize"
)

// eventLogURI is spark.eventLog.dir when the sidecar ships the log.
const eventLogURI = "file://" + EventLogDir

// planEventLogs has the JVM write rolling event logs to the emptyDir the
// sidecar ships them from, when the policy has a history section. A pod's
// or policy's own spark.eventLog.dir is kept, and so is
// spark.eventLog.enabled=false; the sidecar then ships nothing, and the
// user is told. Rolling and its size are defaults the pod may override.
func planEventLogs(_ *corev1.Pod, p *plan) error {
	h := p.pol.History
	if h == nil {
		return nil
	}
	const unshipped = "the sidecar ships no event log to the policy's history store"
	if v, ok := p.conf[keyEventLogEnabled]; ok && !strings.EqualFold(strings.TrimSpace(v), "true") {
		p.warn(fmt.Sprintf("%s is %q, so the JVM writes no event log and %s", keyEventLogEnabled, v, unshipped))
		return nil
	}
	if dir, ok := p.conf[keyEventLogDir]; ok && dir != eventLogURI {
		p.warn(fmt.Sprintf("%s is %q, so the JVM writes its event log there and %s; remove it to have the log kept in the store", keyEventLogDir, dir, unshipped))
		return nil
	}
	p.conf[keyEventLogEnabled] = "true"
	p.conf[keyEventLogDir] = eventLogURI
	for k, v := range map[string]string{keyEventLogRolling: "true", keyEventLogRollingSize: h.MaxFileSize()} {
		if _, ok := p.conf[k]; !ok {
			p.conf[k] = v
		}
	}
	if v := p.conf[keyEventLogRolling]; !strings.EqualFold(strings.TrimSpace(v), "true") {
		p.warn(fmt.Sprintf("%s is %q, so the JVM writes one event log file, which the sidecar ships only when the JVM ends", keyEventLogRolling, v))
	}
	p.shipEventLogs = true
	return nil
}

// eventLogDir is the sidecar's EventLogDir: where it ships from, or "".
func (p *plan) eventLogDir() string {
	if !p.shipEventLogs {
		return ""
	}
	return EventLogDir
}

// addEventLogVolumes gives the Spark container and the sidecar the event
// log emptyDir, and the sidecar alone the history store: the bucket's
// Secret, or the claim. It runs after addSidecar.
func addEventLogVolumes(pod *corev1.Pod, p *plan, done *Status) error {
	if !p.shipEventLogs {
		return nil
	}
	shareEventLogGroup(pod, p)
	sc := sidecarContainer(pod)
	if sc == nil {
		return fmt.Errorf("no %s container to ship event logs", SidecarName)
	}
	own := func(v corev1.Volume, mounts ...func()) {
		pod.Spec.Volumes = upsert(pod.Spec.Volumes, v, volumeName, true)
		done.Volumes = append(done.Volumes, v.Name)
		for _, m := range mounts {
			m()
		}
	}
	mount := func(c *corev1.Container, m corev1.VolumeMount) func() {
		return func() { c.VolumeMounts = upsert(c.VolumeMounts, m, mountPath, true) }
	}
	own(corev1.Volume{Name: VolumeEventLogs, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		mount(p.container(pod), corev1.VolumeMount{Name: VolumeEventLogs, MountPath: EventLogDir}),
		mount(sc, corev1.VolumeMount{Name: VolumeEventLogs, MountPath: EventLogDir, ReadOnly: true}))
	if s3 := p.pol.History.S3; s3 != nil {
		own(corev1.Volume{Name: VolumeHistoryCred, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s3.SecretName}}},
			mount(sc, corev1.VolumeMount{Name: VolumeHistoryCred, MountPath: HistoryCredentialDir, ReadOnly: true}))
	}
	if c := p.pol.History.PVC; c != nil {
		own(corev1.Volume{Name: VolumeHistoryStore, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.ClaimName}}},
			mount(sc, corev1.VolumeMount{Name: VolumeHistoryStore, MountPath: HistoryVolumeDir}))
	}
	return nil
}

// shareEventLogGroup lets the sidecar read what the JVM writes. Spark makes
// the event-log directory and files mode 770 (LOG_FILE_PERMISSIONS in
// EventLogFileWriters.scala, 3.5.9 to 4.3.0), owned by the JVM's user (185
// in apache/spark images), and the sidecar runs as 65532. With a pod
// fsGroup the kubelet makes the emptyDir group-owned by it and setgid, so
// the JVM's files get that group, which every container of the pod has as
// a supplementary group. A pod's own fsGroup is kept. A pod without one
// gets the sidecar's group, unless it mounts storage whose files the
// kubelet would then chown (a PVC, a CSI or ephemeral volume): that pod is
// left alone and its user told to set an fsGroup.
//
// A history claim is such storage too, shared by every driver: with the
// fsGroup sparklet sets, the kubelet changes only its root's ownership
// when it differs (fsGroupChangePolicy OnRootMismatch), instead of walking
// every event log on the volume at each driver's start
// (skipPermissionChange in kubernetes pkg/volume/volume_linux.go, 1.33
// to 1.37); a pod's own fsGroup without that policy is kept, and its user
// told.
func shareEventLogGroup(pod *corev1.Pod, p *plan) {
	sc := pod.Spec.SecurityContext
	store := p.pol.History.PVC != nil
	if sc != nil && sc.FSGroup != nil {
		if store && sc.FSGroupChangePolicy == nil && !p.prior.owns(VolumeHistoryStore) {
			p.warn(fmt.Sprintf("the pod's securityContext.fsGroup has no fsGroupChangePolicy, so the kubelet may change the ownership of every file on the history claim %q "+
				"at each start, where its volume type lets it; set fsGroupChangePolicy: OnRootMismatch", p.pol.History.PVC.ClaimName))
		}
		return
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == VolumeHistoryStore {
			continue
		}
		if v.PersistentVolumeClaim != nil || v.CSI != nil || v.Ephemeral != nil {
			p.warn(fmt.Sprintf("the pod has no securityContext.fsGroup and mounts volume %q, whose files sparklet will not have the kubelet chown; "+
				"set an fsGroup, or the sidecar cannot read the event logs the JVM writes (mode 770) and ships none", v.Name))
			return
		}
	}
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
		pod.Spec.SecurityContext = sc
	}
	gid := sidecarUID
	sc.FSGroup = &gid
	if store {
		policy := corev1.FSGroupChangeOnRootMismatch
		sc.FSGroupChangePolicy = &policy
	}
}
