package podrunner

import (
	"reflect"
	"testing"
)

// Nested binds are mounted parent first, whatever the map's order.
func TestImageMountsParentsFirst(t *testing.T) {
	binds := map[string]string{"/opt/spark/conf": "/c", "/opt/spark": "/s", "/opt/spark-extra": "/e", "/opt/spark/conf/sub": "/x"}
	want := []shimMount{
		{Source: "/s", Target: "/opt/spark", ReadOnly: true},
		{Source: "/e", Target: "/opt/spark-extra", ReadOnly: true},
		{Source: "/c", Target: "/opt/spark/conf", ReadOnly: true},
		{Source: "/x", Target: "/opt/spark/conf/sub", ReadOnly: true},
	}
	for range 20 {
		if got := imageMounts(binds); !reflect.DeepEqual(got, want) {
			t.Fatalf("mounts %+v, want %+v", got, want)
		}
	}
}
