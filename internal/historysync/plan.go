package historysync

import (
	"cmp"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sparklet/sparklet/internal/eventlogs"
)

// remote is one object of Spark's layout under the prefix.
type remote struct {
	key, rel string
	size     int64
	modified time.Time
}

// local is one file of the mirror, by its slash-separated path.
type local struct {
	size     int64
	modified time.Time
}

// plan is what one pass does: the objects to download, in order, and the
// local files to remove.
type plan struct {
	get    []remote
	remove []string
	// skipped counts the keys outside Spark's layout, which are left
	// alone.
	skipped int
}

// decide compares the bucket's listing under prefix ("" or ending in '/')
// with the mirror's files. An object is downloaded when the mirror lacks
// it or holds it with another size or modification time (the mirror sets
// each file's to the object's); a file whose object is gone is removed.
// Within a rolling log the event files come first, by index, and the app
// status last, so that the history server never reads a log as complete
// while its last events are missing.
func decide(objects []eventlogs.Object, prefix string, files map[string]local) plan {
	var p plan
	listed := map[string]bool{}
	for _, o := range objects {
		rel, ok := strings.CutPrefix(o.Key, prefix)
		if !ok || !eventlogs.IsLogFile(rel) {
			p.skipped++
			continue
		}
		listed[rel] = true
		if f, ok := files[rel]; ok && f.size == o.Size && f.modified.UnixMilli() == o.Modified.UnixMilli() {
			continue
		}
		p.get = append(p.get, remote{key: o.Key, rel: rel, size: o.Size, modified: o.Modified})
	}
	slices.SortFunc(p.get, func(a, b remote) int {
		if c := cmp.Compare(path.Dir(a.rel), path.Dir(b.rel)); c != 0 {
			return c
		}
		as, _ := eventlogs.IsAppStatus(a.rel)
		bs, _ := eventlogs.IsAppStatus(b.rel)
		if as != bs {
			if as {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(eventlogs.EventIndex(a.rel), eventlogs.EventIndex(b.rel)); c != 0 {
			return c
		}
		return cmp.Compare(a.rel, b.rel)
	})
	for rel := range files {
		if !listed[rel] {
			p.remove = append(p.remove, rel)
		}
	}
	slices.Sort(p.remove)
	return p
}
