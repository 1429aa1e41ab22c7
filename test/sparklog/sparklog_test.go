package sparklog

import (
	"slices"
	"testing"
)

func TestGroupCounts(t *testing.T) {
	got := GroupCounts(10, 3)
	want := []string{"key-0 count=3 sum=18", "key-1 count=4 sum=22", "key-2 count=3 sum=15"}
	if !slices.Equal(got, want) {
		t.Errorf("GroupCounts(10, 3) = %q, want %q", got, want)
	}
}

// The lines as Spark 3.5.9 and 4.3.0 log them.
const driverLog = `26/11/27 03:00:01 INFO TaskSetManager: Finished task 1.0 in stage 0.0 (TID 1) in 812 ms on 10.215.0.7 (executor 2) (1/4)
26/11/27 03:00:01 INFO TaskSetManager: Finished task 0.0 in stage 0.0 (TID 0) in 901 ms on 10.215.0.6 (executor 1) (2/4)
26/11/27 03:00:02 INFO TaskSetManager: Finished task 2.0 in stage 0.0 (TID 2) in 95 ms on 10.215.0.7 (executor 2) (3/4)
key-0 count=200 sum=100500
Python workers ran in: groupcount-exec-1 groupcount-exec-2
`

func TestDriverLog(t *testing.T) {
	if got := TasksOnExecutors(driverLog); !slices.Equal(got, []string{"2", "1"}) {
		t.Errorf("TasksOnExecutors = %q, want [2 1]", got)
	}
	pods, ok := PythonWorkerPods(driverLog)
	if !ok || !slices.Equal(pods, []string{"groupcount-exec-1", "groupcount-exec-2"}) {
		t.Errorf("PythonWorkerPods = %q, %v", pods, ok)
	}
	if _, ok := PythonWorkerPods("key-0 count=200 sum=100500\n"); ok {
		t.Error("PythonWorkerPods found a line in a log without one")
	}
}
