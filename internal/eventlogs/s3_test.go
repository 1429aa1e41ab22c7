package eventlogs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sparklet/sparklet/internal/eventlogs"
	"github.com/sparklet/sparklet/test/e2egate"
	"github.com/sparklet/sparklet/test/objectstore"
)

// TestS3IntoVersityGW ships a rolling log into a real S3-compatible store,
// with the credential read from files as a mounted Secret has them, and
// reads back what a history server would list.
func TestS3IntoVersityGW(t *testing.T) {
	store, creds := objectstore.StartForTest(t, e2egate.BinDir(t, "to run versitygw"), "history")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s3, err := eventlogs.NewS3(eventlogs.S3Config{Endpoint: store.Endpoint, Bucket: "history", CredentialDir: creds})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "eventlog_v2_spark-1")
	if err := os.MkdirAll(log, 0o755); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 6<<20) // more than minio-go's smallest part
	for name, data := range map[string][]byte{"appstatus_spark-1.inprogress": nil, "events_1_spark-1": big, "events_2_spark-1": []byte("{\"Event\":\"SparkListenerApplicationEnd\"}\n")} {
		if err := os.WriteFile(filepath.Join(log, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shipper := &eventlogs.Shipper{Dir: dir, Prefix: "prod", Store: s3, Interval: time.Second, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	if err := shipper.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(log, "appstatus_spark-1.inprogress"), filepath.Join(log, "appstatus_spark-1")); err != nil {
		t.Fatal(err)
	}
	if err := shipper.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := store.List(ctx, "history", "prod/")
	if err != nil {
		t.Fatal(err)
	}
	want := []objectstore.Object{{Key: "prod/eventlog_v2_spark-1/appstatus_spark-1", Size: 0}, {Key: "prod/eventlog_v2_spark-1/events_1_spark-1", Size: 6 << 20},
		{Key: "prod/eventlog_v2_spark-1/events_2_spark-1", Size: 40}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("store lists %+v, want %+v (the in-progress status replaced by the complete one)", got, want)
	}

	// A wrong secret key is refused for good: Finish gives up at once.
	if err := os.WriteFile(filepath.Join(creds, "AWS_SECRET_ACCESS_KEY"), []byte("wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong, err := eventlogs.NewS3(eventlogs.S3Config{Endpoint: store.Endpoint, Bucket: "history", CredentialDir: creds})
	if err != nil {
		t.Fatal(err)
	}
	refused := &eventlogs.Shipper{Dir: dir, Prefix: "other", Store: wrong, Interval: time.Second, Backoff: time.Second, MaxBackoff: time.Minute}
	start := time.Now()
	if err := refused.Finish(ctx); !errors.Is(err, eventlogs.ErrPermanent) {
		t.Errorf("Finish with a wrong secret key = %v, want an ErrPermanent", err)
	}
	t.Logf("a wrong secret key given up after %v", time.Since(start).Round(time.Millisecond))
}
