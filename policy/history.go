package policy

import (
	"net/url"
	"slices"
	"strings"

	"github.com/sparklet/sparklet/patches/sparkconf"
)

// History asks for every driver's Spark event log to be kept in a store
// after the driver ends (docs/event-logs.md). The JVM writes rolling event
// logs to an emptyDir it shares with the sidecar, and the sidecar uploads
// each finished file; only the sidecar holds the store's credential.
type History struct {
	// S3 is an S3-compatible bucket; PVC a PersistentVolumeClaim. A section
	// names exactly one of them.
	S3  *HistoryS3  `json:"s3,omitempty"`
	PVC *HistoryPVC `json:"pvc,omitempty"`
	// RollingMaxFileSize is spark.eventLog.rolling.maxFileSize: the size at
	// which the JVM starts the next event file, and so the most a driver
	// lost with its node loses. Unset, DefaultRollingMaxFileSize.
	RollingMaxFileSize string `json:"rollingMaxFileSize,omitempty"`
	// URL is the base URL of the history server that reads the store, as
	// users reach it (docs/history-server.md). When set, the sidecar
	// records each application's page there on the driver pod
	// (AppURL).
	URL string `json:"url,omitempty"`
}

// HistoryS3 is where event logs go in an S3-compatible store: under
// s3://Bucket/Prefix/, one eventlog_v2_<app id>/ directory per application,
// as Spark's own rolling writer lays them out, so a history server's
// spark.history.fs.logDirectory is s3a://Bucket/Prefix.
type HistoryS3 struct {
	// Endpoint is the store's URL, https:// (or http:// for a store on the
	// cluster's own network), e.g. "https://s3.eu-west-1.amazonaws.com".
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Prefix   string `json:"prefix,omitempty"`
	// Region signs the requests; unset, "us-east-1".
	Region string `json:"region,omitempty"`
	// SecretName is a Secret in the driver's namespace with the keys
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and optionally
	// AWS_SESSION_TOKEN). It is mounted into the sidecar container alone;
	// the Spark container never sees it.
	SecretName string `json:"secretName"`
}

// HistoryPVC is where event logs go on a volume: the sidecar alone mounts
// the claim, of this name in the driver's namespace, and writes under
// Prefix the files S3 would hold under the same keys, so a history
// server's spark.history.fs.logDirectory is file:<mount>/Prefix. Drivers
// on several nodes need a ReadWriteMany volume (NFS-like).
type HistoryPVC struct {
	ClaimName string `json:"claimName"`
	// Prefix is a directory under the volume's root, made by the sidecar;
	// unset, the root.
	Prefix string `json:"prefix,omitempty"`
}

// DefaultRollingMaxFileSize is sparklet's spark.eventLog.rolling.maxFileSize.
// Spark's default is 128m; a smaller file is shipped sooner. Spark 3.5 and
// 4.0 refuse less than 10 MiB, 4.1 and later less than 2 MiB
// (EVENT_LOG_ROLLING_MAX_FILE_SIZE in core/.../internal/config/package.scala;
// SPARK-52456), so a policy may not go below 10 MiB.
const DefaultRollingMaxFileSize = "16m"

// minRollingMaxFileSize is the smallest spark.eventLog.rolling.maxFileSize
// every supported Spark accepts (3.5 and 4.0: 10 MiB).
const minRollingMaxFileSize = 10 << 20

// history checks one history section.
func (v *validator) history(at string, h *History) {
	if h == nil {
		return
	}
	switch {
	case h.S3 == nil && h.PVC == nil:
		v.add(at, "names no store: event logs need one; set s3 (endpoint, bucket, secretName) or pvc (claimName), or remove %s", at)
	case h.S3 != nil && h.PVC != nil:
		v.add(at, "names both s3 and pvc: the sidecar ships to one store; remove one of %s.s3 and %s.pvc", at, at)
	}
	v.historyPVC(at+".pvc", h.PVC)
	if h.RollingMaxFileSize != "" {
		if n, err := sparkconf.Bytes(h.RollingMaxFileSize, 1); err != nil {
			v.add(at+".rollingMaxFileSize", "%v; write it as Spark does, e.g. \"16m\"", err)
		} else if n < minRollingMaxFileSize {
			v.add(at+".rollingMaxFileSize", "%q is below 10m, which Spark 3.5 and 4.0 refuse; use at least \"10m\"", h.RollingMaxFileSize)
		}
	}
	if h.URL != "" {
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			v.add(at+".url", "%q: want the history server's base URL as users reach it, with scheme and host, e.g. \"https://spark-history.example.com\"", h.URL)
		}
	}
	s := h.S3
	if s == nil {
		return
	}
	if u, err := url.Parse(s.Endpoint); s.Endpoint == "" {
		v.add(at+".s3.endpoint", "is required, e.g. \"https://s3.eu-west-1.amazonaws.com\"")
	} else if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		v.add(at+".s3.endpoint", "%q: want the store's URL with scheme and host only, e.g. \"https://s3.eu-west-1.amazonaws.com\"; the bucket goes in s3.bucket", s.Endpoint)
	}
	if s.Bucket == "" {
		v.add(at+".s3.bucket", "is required")
	} else if strings.ContainsAny(s.Bucket, "/ ") {
		v.add(at+".s3.bucket", "%q: a bucket name has no '/' or space; put the path in s3.prefix", s.Bucket)
	}
	if strings.HasPrefix(s.Prefix, "/") || strings.Contains(s.Prefix, "//") {
		v.add(at+".s3.prefix", "%q: write the key prefix without a leading '/' or empty segments, e.g. \"spark-events/prod\"", s.Prefix)
	}
	if s.SecretName == "" {
		v.add(at+".s3.secretName", "is required: a Secret in the driver's namespace with the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which only the sidecar mounts")
	} else {
		v.dnsSubdomain(at+".s3.secretName", s.SecretName)
	}
}

// historyPVC checks a history section's claim.
func (v *validator) historyPVC(at string, c *HistoryPVC) {
	if c == nil {
		return
	}
	if c.ClaimName == "" {
		v.add(at+".claimName", "is required: a PersistentVolumeClaim in the driver's namespace (in every opted-in namespace, for the cluster's section), which only the sidecar mounts")
	} else {
		v.dnsSubdomain(at+".claimName", c.ClaimName)
	}
	if c.Prefix != "" && (strings.HasPrefix(c.Prefix, "/") || slices.ContainsFunc(strings.Split(strings.TrimSuffix(c.Prefix, "/"), "/"), func(seg string) bool {
		return seg == "" || strings.HasPrefix(seg, ".")
	})) {
		v.add(at+".prefix", "%q: write a directory under the volume's root without a leading '/', empty segments or names starting with '.', e.g. \"spark-events/prod\"", c.Prefix)
	}
}

// MaxFileSize is the rolling size the webhook sets.
func (h *History) MaxFileSize() string {
	if h.RollingMaxFileSize == "" {
		return DefaultRollingMaxFileSize
	}
	return h.RollingMaxFileSize
}

// AppURL is the history server's page of an application's jobs, "" when
// the section names no history server. It is the path Spark's
// HistoryServer serves an application with no attempt id under
// (HistoryServer.scala, 3.5.9 to 4.3.0: /history/<app id>/jobs/), which is
// every client-mode application on Kubernetes.
func (h *History) AppURL(appID string) string {
	if h == nil || h.URL == "" {
		return ""
	}
	return strings.TrimSuffix(h.URL, "/") + "/history/" + url.PathEscape(appID) + "/jobs/"
}
