package objectstore

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// EventFiles are the keys of a rolling Spark event log's event files among
// objects, by index: Spark names them events_<index>_<app>[.<codec>]
// (EventLogFileWriters.scala, 3.5.9 to 4.3.0).
func EventFiles(objects []Object, appID string) []string {
	type indexed struct {
		i   int
		key string
	}
	var files []indexed
	for _, o := range objects {
		name := path.Base(o.Key)
		rest, ok := strings.CutPrefix(name, "events_")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(strings.SplitN(rest, "_", 2)[0])
		if err == nil && strings.Contains(name, appID) {
			files = append(files, indexed{i, o.Key})
		}
	}
	slices.SortFunc(files, func(a, b indexed) int { return a.i - b.i })
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, f.key)
	}
	return out
}

// ReadEvents reads an event file, decompressed when Spark compressed it
// with zstd (4.0's default, spark.eventLog.compress).
func (s *Store) ReadEvents(ctx context.Context, bucket, key string) ([]byte, error) {
	data, err := s.Get(ctx, bucket, key)
	if err != nil || !strings.HasSuffix(key, ".zstd") {
		return data, err
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	out, err := dec.DecodeAll(data, nil)
	if err != nil {
		return nil, fmt.Errorf("decompress %s: %w", key, err)
	}
	return out, nil
}

// Describe names objects with their sizes, for a test's messages.
func Describe(objects []Object) string {
	parts := make([]string, 0, len(objects))
	for _, o := range objects {
		parts = append(parts, path.Base(o.Key)+" ("+strconv.FormatInt(o.Size, 10)+" B)")
	}
	return strings.Join(parts, ", ")
}
