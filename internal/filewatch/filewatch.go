package filewatch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"
)

// Watch reads the files, calls load with their contents, and then calls
// it again whenever any of them changes, until ctx ends. The first load
// happens before Watch returns; its error is returned. Later contents that
// load rejects are not offered again until they change, so load reports
// each bad version once; the caller keeps whatever it loaded last.
func Watch(ctx context.Context, interval time.Duration, paths []string, load func(contents [][]byte) error) error {
	current, err := readAll(paths)
	if err != nil {
		return err
	}
	if err := load(current); err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			next, err := readAll(paths)
			if err != nil || equal(current, next) {
				continue // a half-written or missing file: try again next tick
			}
			_ = load(next)
			current = next
		}
	}()
	return nil
}

func readAll(paths []string) ([][]byte, error) {
	out := make([][]byte, len(paths))
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		out[i] = data
	}
	return out, nil
}

func equal(a, b [][]byte) bool {
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
