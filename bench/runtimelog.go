package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// podRuntime is what containerd's log says of one pod's start, each time
// from its sandbox being ready: the kubelet's request to create each
// container and the return of each start, by container name, and the
// init containers' names in the order they were created.
type podRuntime struct {
	ready            time.Time
	created, started map[string]time.Duration
	inits            []string
}

// span is the time from the sandbox being ready to the kubelet's request
// to create the Spark container, which is where init containers run.
func (r podRuntime) span() time.Duration { return r.created["spark"] }

// readRuntime reads containerd's log for the start of pod ns/name; it
// stops at the create of the Spark container.
func readRuntime(logFile, ns, name string) (podRuntime, error) {
	data, err := os.ReadFile(logFile)
	if err != nil {
		return podRuntime{}, err
	}
	r := podRuntime{created: map[string]time.Duration{}, started: map[string]time.Duration{}}
	sandbox := ""
	ids := map[string]string{} // container id → name
	for _, l := range strings.Split(string(data), "\n") {
		if sandbox == "" {
			if strings.Contains(l, `RunPodSandbox for name:\"`+name+`\"`) && strings.Contains(l, `namespace:\"`+ns+`\"`) && strings.Contains(l, "returns sandbox id") {
				if r.ready, err = logTime(l); err != nil {
					return r, err
				}
				sandbox = quoted(l, `returns sandbox id \"`)
			}
			continue
		}
		at, err := logTime(l)
		if err != nil {
			continue
		}
		switch {
		case strings.Contains(l, `CreateContainer within sandbox \"`+sandbox+`\"`) && strings.Contains(l, "returns container id"):
			ids[quoted(l, `returns container id \"`)] = quoted(l, `name:\"`)
		case strings.Contains(l, `CreateContainer within sandbox \"`+sandbox+`\" for container`):
			c := quoted(l, `name:\"`)
			r.created[c] = at.Sub(r.ready)
			if c == "spark" {
				return r, nil
			}
			r.inits = append(r.inits, c)
		case strings.Contains(l, "StartContainer for") && strings.Contains(l, "returns successfully"):
			if c, ok := ids[quoted(l, `StartContainer for \"`)]; ok {
				r.started[c] = at.Sub(r.ready)
			}
		}
	}
	return r, fmt.Errorf("%s has no sandbox of pod %s/%s followed by the create of its Spark container", logFile, ns, name)
}

// quoted is the escaped-quoted value that follows prefix in line.
func quoted(line, prefix string) string {
	_, rest, _ := strings.Cut(line, prefix)
	v, _, _ := strings.Cut(rest, `\"`)
	return v
}

// logTime is the time of one of containerd's log lines (time="...").
func logTime(line string) (time.Time, error) {
	_, rest, _ := strings.Cut(line, `time="`)
	stamp, _, _ := strings.Cut(rest, `"`)
	return time.Parse(time.RFC3339Nano, stamp)
}
