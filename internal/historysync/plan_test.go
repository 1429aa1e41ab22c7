package historysync

import (
	"reflect"
	"testing"
	"time"

	"github.com/sparklet/sparklet/internal/eventlogs"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	obj := func(key string, size int64, mod time.Time) eventlogs.Object {
		return eventlogs.Object{Key: key, Size: size, Modified: mod}
	}
	const log = "eventlog_v2_spark-1/"
	for _, tc := range []struct {
		name    string
		objects []eventlogs.Object
		files   map[string]local
		get     []string
		remove  []string
		skipped int
	}{
		{name: "empty"},
		{
			name: "a running rolling log: its events in order, the in-progress status last",
			objects: []eventlogs.Object{obj("p/"+log+"appstatus_spark-1.inprogress", 0, t0), obj("p/"+log+"events_10_spark-1.zstd", 5, t0),
				obj("p/"+log+"events_2_spark-1.zstd", 5, t0), obj("p/"+log+"events_1_spark-1.zstd", 5, t0)},
			get: []string{log + "events_1_spark-1.zstd", log + "events_2_spark-1.zstd", log + "events_10_spark-1.zstd", log + "appstatus_spark-1.inprogress"},
		},
		{
			name:    "in sync: nothing to do",
			objects: []eventlogs.Object{obj("p/"+log+"events_1_spark-1", 5, t0), obj("p/spark-2", 7, t1)},
			files:   map[string]local{log + "events_1_spark-1": {5, t0}, "spark-2": {7, t1.Add(300 * time.Microsecond)}},
		},
		{
			name:    "changed size or time: downloaded again",
			objects: []eventlogs.Object{obj("p/"+log+"events_1_spark-1", 6, t0), obj("p/spark-2.inprogress", 7, t1)},
			files:   map[string]local{log + "events_1_spark-1": {5, t0}, "spark-2.inprogress": {7, t0}},
			get:     []string{"spark-2.inprogress", log + "events_1_spark-1"},
		},
		{
			name: "the application completed: the complete status in, the in-progress one out",
			objects: []eventlogs.Object{obj("p/"+log+"events_1_spark-1", 5, t0), obj("p/"+log+"events_2_spark-1", 3, t1),
				obj("p/"+log+"appstatus_spark-1", 0, t1)},
			files: map[string]local{log + "events_1_spark-1": {5, t0}, log + "appstatus_spark-1.inprogress": {0, t0}},
			get:   []string{log + "events_2_spark-1", log + "appstatus_spark-1"}, remove: []string{log + "appstatus_spark-1.inprogress"},
		},
		{
			name:    "gone from the store: removed",
			objects: []eventlogs.Object{obj("p/spark-3", 1, t0)},
			files:   map[string]local{"spark-3": {1, t0}, log + "events_1_spark-1": {5, t0}, log + "appstatus_spark-1": {0, t0}},
			remove:  []string{log + "appstatus_spark-1", log + "events_1_spark-1"},
		},
		{
			name: "outside Spark's layout or the prefix: skipped",
			objects: []eventlogs.Object{obj("p/.hidden", 1, t0), obj("p/"+log+"notes.txt", 1, t0), obj("p/a/b/c", 1, t0),
				obj("p/"+log+"../../etc/passwd", 1, t0), obj("p/../x", 1, t0), obj("other/spark-4", 1, t0), obj("p/", 0, t0), obj("p/spark-5", 1, t0)},
			get: []string{"spark-5"}, skipped: 7,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decide(tc.objects, "p/", tc.files)
			var get []string
			for _, o := range p.get {
				get = append(get, o.rel)
				if o.key != "p/"+o.rel {
					t.Errorf("%s from key %s", o.rel, o.key)
				}
			}
			if !reflect.DeepEqual(get, tc.get) || !reflect.DeepEqual(p.remove, tc.remove) || p.skipped != tc.skipped {
				t.Errorf("get %q, remove %q, skipped %d; want get %q, remove %q, skipped %d", get, p.remove, p.skipped, tc.get, tc.remove, tc.skipped)
			}
		})
	}
}
