package sparklog

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// GroupCounts is what examples/groupcount.py prints for the numbers 1..n
// grouped by n mod keys, one line each.
func GroupCounts(n, keys int) []string {
	count, sum := make([]int, keys), make([]int, keys)
	for i := 1; i <= n; i++ {
		count[i%keys]++
		sum[i%keys] += i
	}
	var lines []string
	for k := range keys {
		lines = append(lines, fmt.Sprintf("key-%d count=%d sum=%d", k, count[k], sum[k]))
	}
	return lines
}

var pythonWorkers = regexp.MustCompile(`(?m)^Python workers ran in: (.+)$`)

// PythonWorkerPods are the pods examples/groupcount.py says its Python
// function ran in; ok is false when the log has no such line.
func PythonWorkerPods(driverLog string) (pods []string, ok bool) {
	m := pythonWorkers.FindStringSubmatch(driverLog)
	if m == nil {
		return nil, false
	}
	return strings.Fields(m[1]), true
}

// taskOnExecutor is TaskSetManager's line for a task that finished on an
// executor, the same in Spark 3.5 and 4.x.
var taskOnExecutor = regexp.MustCompile(`Finished task \S+ in stage \S+ \(TID \d+\) in \d+ ms on \S+ \(executor (\S+)\)`)

// TasksOnExecutors returns the ids of the executors the driver's log says
// tasks finished on.
func TasksOnExecutors(driverLog string) []string {
	var ids []string
	for _, m := range taskOnExecutor.FindAllStringSubmatch(driverLog, -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

var piLine = regexp.MustCompile(`Pi is roughly ([0-9.]+)`)

// Pi is the value SparkPi printed; ok is false when the log has none.
func Pi(driverLog string) (pi float64, ok bool) {
	m := piLine.FindStringSubmatch(driverLog)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}
