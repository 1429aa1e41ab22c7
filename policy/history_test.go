package policy

import (
	"strings"
	"testing"
)

func TestHistoryValidation(t *testing.T) {
	const ok = "s3: {endpoint: \"https://s3.example.com\", bucket: logs, secretName: history-s3}"
	for text, want := range map[string]string{
		"history: {}\n": "history: names no store: event logs need one; set s3 (endpoint, bucket, secretName) or pvc (claimName)",
		"history: {" + ok + ", pvc: {claimName: logs}}\n":                                                  "history: names both s3 and pvc: the sidecar ships to one store; remove one of history.s3 and history.pvc",
		"history: {pvc: {}}\n":                                                                             "history.pvc.claimName: is required: a PersistentVolumeClaim in the driver's namespace",
		"history: {pvc: {claimName: Logs_1}}\n":                                                            "history.pvc.claimName: \"Logs_1\"",
		"history: {pvc: {claimName: logs, prefix: /events}}\n":                                             "history.pvc.prefix: \"/events\": write a directory under the volume's root without a leading '/'",
		"history: {pvc: {claimName: logs, prefix: a/../b}}\n":                                              "history.pvc.prefix: \"a/../b\"",
		"history: {pvc: {claimName: logs, prefix: a//b}}\n":                                                "history.pvc.prefix: \"a//b\"",
		"namespaces: {a: {history: {pvc: {claimName: logs}, " + ok + "}}}\n":                               "namespaces.a.history: names both s3 and pvc",
		"history: {s3: {bucket: logs, secretName: s}}\n":                                                   "history.s3.endpoint: is required",
		"history: {s3: {endpoint: \"s3.example.com\", bucket: logs, secretName: s}}\n":                     "history.s3.endpoint: \"s3.example.com\": want the store's URL",
		"history: {s3: {endpoint: \"https://s3.example.com/logs\", bucket: logs, secretName: s}}\n":        "the bucket goes in s3.bucket",
		"history: {s3: {endpoint: \"https://s3.example.com\", bucket: \"logs/x\", secretName: s}}\n":       "history.s3.bucket: \"logs/x\": a bucket name has no '/'",
		"history: {s3: {endpoint: \"https://s3.example.com\", bucket: logs}}\n":                            "history.s3.secretName: is required",
		"history: {s3: {endpoint: \"https://s3.example.com\", bucket: logs, secretName: s, prefix: /a}}\n": "history.s3.prefix: \"/a\": write the key prefix without a leading '/'",
		"history: {" + ok + ", rollingMaxFileSize: 2m}\n":                                                  "history.rollingMaxFileSize: \"2m\" is below 10m",
		"history: {" + ok + ", rollingMaxFileSize: lots}\n":                                                "history.rollingMaxFileSize: \"lots\" is not",
		"namespaces: {a: {history: {s3: {endpoint: \"ftp://x\", bucket: b, secretName: s}}}}\n":            "namespaces.a.history.s3.endpoint",
		"history: {" + ok + ", url: \"history.example.com\"}\n":                                            "history.url: \"history.example.com\": want the history server's base URL",
		"history: {" + ok + ", url: \"https://h.example.com/?x=1\"}\n":                                     "history.url: \"https://h.example.com/?x=1\"",
		"namespaces: {a: {history: {" + ok + ", url: \"ftp://h\"}}}\n":                                     "namespaces.a.history.url",
	} {
		if _, err := Parse([]byte(text), "dev"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", text, err, want)
		}
	}
	p, err := Parse([]byte("history: {"+ok+"}\nnamespaces: {b: {history: {s3: {endpoint: \"http://store.b:9000\", bucket: b-logs, secretName: b-s3}, rollingMaxFileSize: 32m}}}\n"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if h := p.For("a").History; h == nil || h.S3.Bucket != "logs" || h.MaxFileSize() != DefaultRollingMaxFileSize {
		t.Errorf("namespace a: %+v, want the cluster's section with the default size", h)
	}
	if h := p.For("b").History; h == nil || h.S3.Bucket != "b-logs" || h.MaxFileSize() != "32m" {
		t.Errorf("namespace b: %+v, want its own section", h)
	}
	// A namespace's section replaces the cluster's whole: a claim there
	// replaces the cluster's bucket, and the other way round.
	p, err = Parse([]byte("history: {"+ok+"}\nnamespaces: {c: {history: {pvc: {claimName: history, prefix: events/}}}}\n"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if h := p.For("c").History; h == nil || h.S3 != nil || h.PVC == nil || h.PVC.ClaimName != "history" || h.PVC.Prefix != "events/" {
		t.Errorf("namespace c: %+v, want its claim alone", h)
	}
	p, err = Parse([]byte("history: {pvc: {claimName: history}}\nnamespaces: {d: {history: {"+ok+"}}}\n"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if h := p.For("d").History; h == nil || h.PVC != nil || h.S3 == nil {
		t.Errorf("namespace d: %+v, want its bucket alone", h)
	}
	if h := p.For("e").History; h == nil || h.PVC == nil || h.PVC.ClaimName != "history" || h.S3 != nil {
		t.Errorf("namespace e: %+v, want the cluster's claim", h)
	}
	if h := (&Policy{}).For("a").History; h != nil {
		t.Errorf("no history section: %+v, want nil", h)
	}
}

func TestHistoryAppURL(t *testing.T) {
	for base, want := range map[string]string{
		"":                                  "",
		"https://history.example.com":       "https://history.example.com/history/spark-1/jobs/",
		"https://history.example.com/":      "https://history.example.com/history/spark-1/jobs/",
		"http://gw.example.com:8080/spark/": "http://gw.example.com:8080/spark/history/spark-1/jobs/",
	} {
		p, err := Parse([]byte("history: {s3: {endpoint: \"https://s3.example.com\", bucket: logs, secretName: s}, url: \""+base+"\"}\n"), "dev")
		if err != nil {
			t.Fatalf("url %q: %v", base, err)
		}
		if got := p.For("a").History.AppURL("spark-1"); got != want {
			t.Errorf("url %q: AppURL = %q, want %q", base, got, want)
		}
	}
	if got := (*History)(nil).AppURL("spark-1"); got != "" {
		t.Errorf("no history section: AppURL = %q", got)
	}
}
