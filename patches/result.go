package patches

// Result is what Driver decided besides its changes to the pod.
type Result struct {
	// Skipped, when set, says why the pod was left alone.
	Skipped *Skip
	// Warnings are what the user who created the pod should know; the
	// webhook returns them as admission warnings, which kubectl prints.
	Warnings []string
}

// Skip is why a pod was left alone.
type Skip struct {
	// Reason is one of the Skip* constants, a fixed snake_case value for
	// metrics.
	Reason string
	// Message says it in words, for logs.
	Message string
}

// The reasons a driver pod is left alone.
const (
	SkipNotDriver               = "not_driver"
	SkipOptedOut                = "opted_out"
	SkipLaunchedBySparkOperator = "launched_by_spark_operator"
	SkipSparkSubmitClusterMode  = "spark_submit_cluster_mode"
)

// ExecutorResult is what Executor decided besides its changes to the pod.
type ExecutorResult struct {
	// Warnings are what the application's owner should know of an
	// executor that was let through; the sidecar posts each as a Warning
	// Event on the driver pod and answers the JVM with it in a Warning
	// header, as the API server answers with admission warnings.
	Warnings []ExecutorWarning
}

// ExecutorWarning is one warning about an executor pod.
type ExecutorWarning struct {
	// Reason is one of the WarnExecutor* constants, a fixed CamelCase
	// value, the reason of the Event the sidecar posts.
	Reason string
	// Message says it in words; it names no executor, so that the
	// warnings about many executors are one Event with a count.
	Message string
}

// The reasons of executor warnings.
const (
	// WarnExecutorLargerThanGang: the executor asks for more than its
	// driver's YuniKorn gang holds room for (beyondGang).
	WarnExecutorLargerThanGang = "ExecutorLargerThanGang"
)
