package objectstore

import (
	"context"
	"testing"
	"time"
)

// StartForTest starts binDir/versitygw on 127.0.0.1 for t with the bucket
// made and the root user's keys written as a mounted Secret holds them
// (WriteCredentials), and stops it when t ends. It returns the store and
// the keys' directory.
func StartForTest(t testing.TB, binDir, bucket string) (*Store, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, binDir, t.TempDir(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if err := s.MakeBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	if err := s.WriteCredentials(creds); err != nil {
		t.Fatal(err)
	}
	return s, creds
}
