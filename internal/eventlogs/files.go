package eventlogs

import (
	"cmp"
	"os"
	"path"
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

// IsLogFile tells whether rel, a slash-separated path under an event-log
// directory, is a file of Spark's layout that a history server reads: a
// single-file log, or the event file or app status of a rolling log's
// directory. A name that starts with '.' is none: Spark's reader skips
// such a single-file log (EventLogFileReader.isSingleEventLog, 3.5.9 to
// 4.3.0), and a rolling log reads only events_ and appstatus_ files.
func IsLogFile(rel string) bool {
	dir, name, nested := strings.Cut(rel, "/")
	if !nested {
		return dir != "" && !strings.HasPrefix(dir, ".")
	}
	return strings.HasPrefix(dir, rollingDirPrefix) && !strings.Contains(name, "/") &&
		(strings.HasPrefix(name, eventsPrefix) || strings.HasPrefix(name, appStatusPrefix))
}

// IsRollingDir tells whether name is a rolling log's directory.
func IsRollingDir(name string) bool { return strings.HasPrefix(name, rollingDirPrefix) }

// IsAppStatus tells whether rel is a rolling log's app status, and whether
// that says the application completed.
func IsAppStatus(rel string) (status, complete bool) {
	name := path.Base(rel)
	status = strings.HasPrefix(name, appStatusPrefix)
	return status, status && !strings.HasSuffix(name, inProgress)
}

// EventIndex is the index of a rolling log's event file, -1 for any other
// file.
func EventIndex(rel string) int64 {
	rest, ok := strings.CutPrefix(path.Base(rel), eventsPrefix)
	if !ok {
		return -1
	}
	i, err := strconv.ParseInt(strings.SplitN(rest, "_", 2)[0], 10, 64)
	if err != nil {
		return -1
	}
	return i
}

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
			if i := EventIndex(name); i >= 0 {
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
