package eventlogs

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The names Spark's event-log writers give (EventLogFileWriters.scala,
// 3.5.9 to 4.3.0): a rolling log is a directory eventlog_v2_<app> of
// events_<index>_<app>[.<codec>] files and one zero-byte
// appstatus_<app>[.inprogress]; a single-file log is <app>[.<codec>]
// [.inprogress].
const (
	rollingDirPrefix = "eventlog_v2_"
	eventsPrefix     = "events_"
	appStatusPrefix  = "appstatus_"
	inProgress       = ".inprogress"
)

// file is one file of the directory, by its path relative to it.
type file struct {
	rel  string
	size int64
	mod  int64 // modification time, ns
}

// ready lists the files of dir that are finished, in the order to ship
// them. A log is finished once Spark has stopped writing it (a rolling
// log's app status, or a single-file log's name, without .inprogress) or
// once the JVM has ended (final): then every file of it is ready, a
// complete app status last, so that the store never holds a complete log
// with events missing. Of a rolling log still written, the in-progress
// app status (empty, so that the store holds a log a history server reads
// as in progress) and every event file but the last are ready.
func ready(dir string, final bool) ([]file, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []file
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir() && strings.HasPrefix(name, rollingDirPrefix):
			files, err := rollingReady(dir, name, final)
			if err != nil {
				return nil, err
			}
			out = append(out, files...)
		case e.Type().IsRegular() && (final || !strings.HasSuffix(name, inProgress)):
			if f, ok := stat(dir, name); ok {
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// rollingReady lists what is ready of one rolling log's directory.
func rollingReady(dir, log string, final bool) ([]file, error) {
	entries, err := os.ReadDir(filepath.Join(dir, log))
	if err != nil {
		return nil, err
	}
	type event struct {
		index int64
		name  string
	}
	var events []event
	var running, complete []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case !e.Type().IsRegular():
		case strings.HasPrefix(name, eventsPrefix):
			i, err := strconv.ParseInt(strings.SplitN(strings.TrimPrefix(name, eventsPrefix), "_", 2)[0], 10, 64)
			if err == nil {
				events = append(events, event{i, name})
			}
		case strings.HasPrefix(name, appStatusPrefix) && strings.HasSuffix(name, inProgress):
			running = append(running, name)
		case strings.HasPrefix(name, appStatusPrefix):
			complete = append(complete, name)
		}
	}
	slices.SortFunc(events, func(a, b event) int { return cmp.Compare(a.index, b.index) })
	if !final && len(complete) == 0 && len(events) > 0 {
		events = events[:len(events)-1] // the one the JVM writes
	}
	var names []string
	names = append(names, running...)
	for _, e := range events {
		names = append(names, e.name)
	}
	names = append(names, complete...)
	var out []file
	for _, name := range names {
		if f, ok := stat(dir, filepath.Join(log, name)); ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// stat reads one file; false when it went away meanwhile (Spark renames
// the app status when it stops).
func stat(dir, rel string) (file, bool) {
	fi, err := os.Stat(filepath.Join(dir, rel))
	if err != nil || !fi.Mode().IsRegular() {
		return file{}, false
	}
	return file{rel: filepath.ToSlash(rel), size: fi.Size(), mod: fi.ModTime().UnixNano()}, true
}
