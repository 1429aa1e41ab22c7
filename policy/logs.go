package policy

import (
	"regexp"
	"slices"
	"strings"
)

// Logs links the Spark UI to the platform's log system (docs/event-logs.md).
type Logs struct {
	// ExecutorURL is spark.ui.custom.executor.log.url, unless the pod sets
	// its own: the link on the Spark UI's and the history server's
	// executors page. Its {{...}} placeholders are ExecutorLogPlaceholders,
	// which the sidecar gives each executor as Spark's executor attributes.
	ExecutorURL string `json:"executorURL,omitempty"`
	// KeepFailedExecutorsSeconds keeps a failed executor pod that long
	// after its JVM asks to delete it, so that `kubectl logs` works on it;
	// the sidecar deletes it then, or, when the driver has ended first,
	// the webhook (--reap-kept-executors, which the chart sets when a
	// policy keeps failed executors). 0 deletes it at once.
	KeepFailedExecutorsSeconds int64 `json:"keepFailedExecutorsSeconds,omitempty"`
}

// MaxKeepFailedExecutorsSeconds stays below the 180 s after which Spark
// forgets an executor it removed (ExecutorPodsLifecycleManager's
// removedExecutorsCache: 3 minutes in 3.5.9,
// spark.kubernetes.executor.deletedExecutorsCacheTimeout from 4.1): a pod
// the JVM still sees after that is removed again, and 4.x counts it as
// another executor failure (ExecutorFailureTracker).
const MaxKeepFailedExecutorsSeconds = 170

// ExecutorLogPlaceholders are the {{...}} an executor log URL may use.
var ExecutorLogPlaceholders = []string{"APP_ID", "CONTAINER_NAME", "EXECUTOR_ID", "NAMESPACE", "NODE_NAME", "POD_NAME"}

// placeholder matches {{NAME}} as Spark's ExecutorLogUrlHandler does.
var placeholder = regexp.MustCompile(`\{\{([A-Za-z0-9_\-]+)\}\}`)

// logs checks one logs section.
func (v *validator) logs(at string, l *Logs) {
	if l == nil {
		return
	}
	if k := l.KeepFailedExecutorsSeconds; k < 0 || k > MaxKeepFailedExecutorsSeconds {
		v.add(at+".keepFailedExecutorsSeconds", "must be between 0 and %d, got %d: the JVM still sees a kept pod, and Spark forgets "+
			"a removed executor after 180 s, then removes it again and on 4.x counts another executor failure", MaxKeepFailedExecutorsSeconds, k)
	}
	if l.ExecutorURL == "" {
		return
	}
	u := l.ExecutorURL
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		v.add(at+".executorURL", "%q: want an http:// or https:// URL, e.g. \"https://logs.example.com/{{NAMESPACE}}/{{POD_NAME}}\"", u)
	}
	for _, m := range placeholder.FindAllStringSubmatch(u, -1) {
		if !slices.Contains(ExecutorLogPlaceholders, m[1]) {
			v.add(at+".executorURL", "{{%s}} is no executor attribute sparklet sets; use {{%s}}", m[1], strings.Join(ExecutorLogPlaceholders, "}}, {{"))
		}
	}
}
