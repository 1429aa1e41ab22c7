package patches

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/vocab"
)

// check reads the pod and the policy, refuses what the policy forbids, and
// works out part of the plan. It never changes the pod.
type check struct {
	name string
	run  func(*corev1.Pod, *plan) error
}

// step changes the pod as the finished plan says, and records in done what
// it injected. It never changes the plan.
type step struct {
	name string
	run  func(pod *corev1.Pod, p *plan, done *Status) error
}

// The driver injection, in order. The checks run first, so a refused pod is
// left untouched, and in this order, which is the order in which a pod's
// refusals take precedence. Every step is idempotent; the status step
// comes last since it records what the others did.
var (
	driverChecks = []check{
		{"spark container", findSparkContainer},
		{"prior injection", readPrior},
		{"host network", refuseHostNetwork},
		{"reserved names", refuseReservedNames},
		{"service account token", refuseTokens},
		{"host routes", refuseHostRoutes},
		{"annotations written by sparklet", warnWrittenBySparklet},
		{"spark conf", layerConf},
		{"event logs", planEventLogs},
		{"log urls", planLogURLs},
		{"allocator", refuseControllerAllocator},
		{"limits", checkLimits},
		{"images", checkImages},
		{"other containers", checkOtherContainers},
		{"executors", checkExecutors},
		{"fetch", planFetch},
		{"spark connect", planConnect},
		{"spark connect policy", planConnectPolicy},
		{"restarts", planAppPerJVM},
		{"spark connect clients", planConnectAuth},
		{"spark connect tls", planConnectTLS},
		{"image conf", planImageConf},
		{"app id", pickAppID},
		{"effective conf", finishConf},
		{"overwrites", refuseOverwrites},
		{"enforced pod settings", warnEnforcedReplaces},
		{"non-root by name", warnNonRootByName},
		{"local dirs", planLocalDirs},
		{"executor service account", refuseLentServiceAccount},
		{"sidecar ports", refuseSidecarPorts},
		{"batch scheduler", planScheduling},
		{"ui", checkUI},
		{"connect service", checkConnectService},
	}
	driverSteps = []step{
		{"app id label", labelAppID},
		{"connect server label", labelConnectServer},
		{"policy", applyDriverPolicy},
		{"ui port", nameUIPort},
		{"credentials", addCredentials},
		{"service account", isolateServiceAccount},
		{"volumes", addVolumes},
		{"env", addEnv},
		{"foreground", runInForeground},
		{"init container", addInitContainer},
		{"sidecar", addSidecar},
		{"conf init container", addConfInit},
		{"event log volumes", addEventLogVolumes},
		{"spark connect tls volume", addConnectTLSVolume},
		{"mesh", meshExclusions},
		{"gang", applyScheduling},
		{"scheduling digest", recordSchedulingDigest},
		{"status", annotate},
	}
)

// StepError is an error from one check or step of the driver injection.
// Its message is the step's own, which is what users see (a refusal's
// message already names the field at fault); Step names the step for logs
// and tests. errors.As finds a *Refused through it.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// Driver patches pod in place. Its Result says when the pod is left alone
// (not a driver, opted out, launched by another system) and what the user
// should be warned of. It returns a *Refused when policy forbids the pod,
// or another error for input it cannot handle. Errors from a check or
// step are a *StepError.
func Driver(pod *corev1.Pod, in Input) (Result, error) {
	if pod.Labels[vocab.LabelRole] != "driver" {
		return Result{Skipped: &Skip{Reason: SkipNotDriver, Message: "not labelled spark-role=driver"}}, nil
	}
	if skip := launchedElsewhere(pod); skip != nil {
		warnings := append([]string{skip.Message}, ignoredAnnotations(pod, "another system launched the pod")...)
		return Result{Skipped: skip, Warnings: append(warnings, warnSkippedOnDriverAccount(pod, in.Policy, "another system launched it")...)}, nil
	}
	if err := checkAnnotations(pod); err != nil {
		return Result{}, &StepError{Step: "annotations", Err: err}
	}
	if optedOut(pod) {
		why := "the pod opts out with " + vocab.AnnotationInject + `: "false"`
		return Result{Skipped: &Skip{Reason: SkipOptedOut, Message: "opted out with annotation " + vocab.AnnotationInject + `: "false"`},
			Warnings: append(ignoredAnnotations(pod, why), warnSkippedOnDriverAccount(pod, in.Policy, "it opts out")...)}, nil
	}
	if in.Policy == nil {
		return Result{}, fmt.Errorf("no policy")
	}
	ns := in.Namespace
	if ns == "" {
		ns = pod.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	in.Namespace = ns
	p := &plan{in: in, pol: in.Policy}
	for _, c := range driverChecks {
		if err := c.run(pod, p); err != nil {
			return Result{Warnings: p.warnings}, &StepError{Step: c.name, Err: err}
		}
	}
	var done Status
	for _, s := range driverSteps {
		if err := s.run(pod, p, &done); err != nil {
			return Result{Warnings: p.warnings}, &StepError{Step: s.name, Err: err}
		}
	}
	return Result{Warnings: p.warnings}, nil
}
