package policy

import (
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The batch schedulers sparklet sets drivers and executors up for
// (docs/scheduling.md).
const (
	SchedulerYuniKorn = "yunikorn"
	SchedulerKueue    = "kueue"
	// SchedulerNone opts a pod out of the policy's batch scheduler.
	SchedulerNone = "none"
)

// BatchSchedulers lists the values batchScheduler accepts.
var BatchSchedulers = []string{SchedulerYuniKorn, SchedulerKueue, SchedulerNone}

// Scheduling selects a batch scheduler for drivers and their executors.
// A namespace's section replaces the cluster's as a whole.
type Scheduling struct {
	// BatchScheduler is yunikorn, kueue or none; empty leaves pods to the
	// scheduler they name.
	BatchScheduler string `json:"batchScheduler,omitempty"`
	// Queue is YuniKorn's queue (root.sparklet) or Kueue's LocalQueue.
	Queue string `json:"queue,omitempty"`
	// PlaceholderTimeout is how long YuniKorn keeps the gang's placeholders
	// (a Go duration such as 10m); YuniKorn's own default is 15m.
	PlaceholderTimeout string `json:"placeholderTimeout,omitempty"`
	// GangStyle is YuniKorn's gangSchedulingStyle: Soft (the default)
	// schedules the application without its gang after the timeout, Hard
	// fails it.
	GangStyle string `json:"gangStyle,omitempty"`
	// PriorityClassName is the driver's and executors' PriorityClass with
	// YuniKorn, and the Kueue WorkloadPriorityClass with Kueue.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Enforce keeps pods from choosing another batch scheduler or none;
	// they may still name their queue.
	Enforce bool `json:"enforce,omitempty"`
}

// yunikornQueue is a YuniKorn queue path: dot-separated names of the
// characters its configuration allows (yunikorn-core
// pkg/common/configs/configvalidator.go, v1.9.0: QueueNameRegExp).
var yunikornQueue = regexp.MustCompile(`^[a-zA-Z0-9_:#/@-]{1,64}(\.[a-zA-Z0-9_:#/@-]{1,64})*$`)

// CheckScheduling returns the problems of a scheduling section, each
// naming the field under at (a policy path or a pod annotation) by the
// names fields gives.
func CheckScheduling(s Scheduling, field func(name string) string) []string {
	var errs []string
	add := func(name, msg string) { errs = append(errs, field(name)+": "+msg) }
	switch s.BatchScheduler {
	case "", SchedulerYuniKorn, SchedulerKueue, SchedulerNone:
	default:
		add("batchScheduler", "\""+s.BatchScheduler+"\" is not a batch scheduler sparklet knows; use one of "+strings.Join(BatchSchedulers, ", "))
		return errs
	}
	active := s.BatchScheduler == SchedulerYuniKorn || s.BatchScheduler == SchedulerKueue
	if !active {
		for _, f := range [][2]string{{"queue", s.Queue}, {"placeholderTimeout", s.PlaceholderTimeout}, {"gangStyle", s.GangStyle}, {"priorityClassName", s.PriorityClassName}} {
			if f[1] != "" {
				add(f[0], "needs a batch scheduler; set "+field("batchScheduler")+" to yunikorn or kueue, or remove it")
			}
		}
		return errs
	}
	if s.BatchScheduler == SchedulerKueue {
		for _, f := range [][2]string{{"placeholderTimeout", s.PlaceholderTimeout}, {"gangStyle", s.GangStyle}} {
			if f[1] != "" {
				add(f[0], "only YuniKorn has placeholders and gangs; Kueue admits each pod on its own: remove it")
			}
		}
		if s.Queue != "" {
			for _, m := range validation.IsDNS1123Subdomain(s.Queue) {
				add("queue", "\""+s.Queue+"\" is not a LocalQueue name: "+m)
			}
		}
	}
	if s.BatchScheduler == SchedulerYuniKorn {
		if s.Queue != "" && !yunikornQueue.MatchString(s.Queue) {
			add("queue", "\""+s.Queue+"\" is not a YuniKorn queue path such as root.sparklet (names of letters, digits and _:#/@- joined by dots)")
		}
		if s.PlaceholderTimeout != "" {
			if d, err := time.ParseDuration(s.PlaceholderTimeout); err != nil || d < time.Second {
				add("placeholderTimeout", "\""+s.PlaceholderTimeout+"\" is not a duration of a second or more, such as 10m")
			}
		}
		switch s.GangStyle {
		case "", "Soft", "Hard":
		default:
			add("gangStyle", "\""+s.GangStyle+"\" must be Soft or Hard")
		}
	}
	if s.PriorityClassName != "" {
		for _, m := range validation.IsDNS1123Subdomain(s.PriorityClassName) {
			add("priorityClassName", "\""+s.PriorityClassName+"\" is not a PriorityClass name: "+m)
		}
	}
	return errs
}

// PlaceholderSeconds is PlaceholderTimeout in whole seconds, 0 when unset.
func (s Scheduling) PlaceholderSeconds() int64 {
	d, err := time.ParseDuration(s.PlaceholderTimeout)
	if err != nil {
		return 0
	}
	return int64(d / time.Second)
}

func (v *validator) scheduling(at string, s Scheduling, executorScheduler []string) {
	v.errs = append(v.errs, CheckScheduling(s, func(name string) string { return at + "." + name })...)
	if s.BatchScheduler != SchedulerYuniKorn {
		return
	}
	for _, name := range executorScheduler {
		if name != "" && name != SchedulerYuniKorn {
			v.add(at+".batchScheduler", "yunikorn, but the policy's schedulerName is %q; remove that schedulerName (sparklet sets yunikorn)", name)
		}
	}
}

// schedulerNames are the schedulerName values the pod rules set.
func schedulerNames(rules ...PodRules) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Defaults.SchedulerName, r.Enforced.SchedulerName)
	}
	return out
}
