package sidecar

import (
	"testing"

	"github.com/sparklet/sparklet/internal/eventlogs"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

// The policy's claim is the directory the webhook mounted, with the
// prefix as a bucket's would be; a bucket is an S3 store.
func TestHistoryStore(t *testing.T) {
	store, prefix, _, err := historyStore(&policy.History{PVC: &policy.HistoryPVC{ClaimName: "h", Prefix: "events/prod"}})
	if err != nil || store != (eventlogs.Dir{Root: patches.HistoryVolumeDir}) || prefix != "events/prod" {
		t.Errorf("claim: %#v %q %v, want the directory %s under events/prod", store, prefix, err, patches.HistoryVolumeDir)
	}
	store, prefix, _, err = historyStore(&policy.History{S3: &policy.HistoryS3{Endpoint: "https://s3.example.com", Bucket: "b", Prefix: "p", SecretName: "s"}})
	if _, ok := store.(*eventlogs.S3); !ok || err != nil || prefix != "p" {
		t.Errorf("bucket: %#v %q %v, want an S3 store under p", store, prefix, err)
	}
}
