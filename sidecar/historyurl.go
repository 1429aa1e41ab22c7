package sidecar

import (
	"context"
	"fmt"
	"time"

	"github.com/sparklet/sparklet/internal/kubecore"
	"github.com/sparklet/sparklet/policy"
	"github.com/sparklet/sparklet/vocab"
)

// historyURLTimeout bounds the annotation's patch.
const historyURLTimeout = 30 * time.Second

// historyURL records an application's page on the policy's history server
// (history.url) on the driver pod, as sparklet.io/history-url, and in a
// HistoryURL Event. The sidecar calls it once it ships the event log and
// knows the application id: at start, or, for a driver whose every JVM is
// an application of its own, when a JVM names its application. A failure
// is a Warning Event, never the driver's failure.
type historyURL struct {
	client    kubecore.Interface
	namespace string
	pod       string
	history   *policy.History
	events    *recorder
}

// record writes the URL of appID; nothing when the policy names no
// history server.
func (h *historyURL) record(ctx context.Context, appID string) {
	url := h.history.AppURL(appID)
	if url == "" || appID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, historyURLTimeout)
	defer cancel()
	if err := annotatePod(ctx, h.client, h.namespace, h.pod, vocab.AnnotationHistoryURL, url); err != nil {
		h.events.warning("HistoryURLFailed", fmt.Sprintf("annotate the driver with the history server's page of %s, %s: %v", appID, url, err))
		return
	}
	h.events.normal("HistoryURL", fmt.Sprintf("once its event log is shipped, the history server shows application %s at %s", appID, url))
}
