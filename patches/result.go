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
