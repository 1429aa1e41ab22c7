package patches

import (
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
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
	// TokenContainers kept the pod's service-account token, as the
	// policy's tokenContainers asked.
	TokenContainers []string `json:"tokenContainers,omitempty"`
	// Connect is ConnectServer or ConnectPlugin for a Spark Connect
	// server.
	Connect string `json:"connect,omitempty"`
	// AppPerJVM is set when every JVM the Spark container runs is an
	// application of its own, with an id Spark picks; AppID then names
	// the pod's applications together (its executors' sparklet.io/driver-app).
	AppPerJVM bool `json:"appPerJVM,omitempty"`
}

// annotate records the effective configuration, which the JVM reads through
// the downward API, and what the steps before it injected.
func annotate(pod *corev1.Pod, p *plan, done *Status) error {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[vocab.AnnotationEffectiveConf] = p.confText

	status := *done
	status.Version, status.AppID, status.SparkContainer = p.in.Version, p.appID, p.container(pod).Name
	status.Connect, status.AppPerJVM = p.connect, p.appPerJVM
	sort.Strings(status.Volumes)
	sort.Strings(status.Env)
	// On re-injection there is nothing left to remove; keep the record.
	var old Status
	if json.Unmarshal([]byte(pod.Annotations[vocab.AnnotationStatus]), &old) == nil && len(status.RemovedVolumes) == 0 {
		status.RemovedVolumes = old.RemovedVolumes
	}
	st, err := json.Marshal(status)
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	pod.Annotations[vocab.AnnotationStatus] = string(st)
	return refuseOversizedAnnotations(pod)
}
