package vocab

// Spark's own labels (apache/spark resource-managers/kubernetes,
// org/apache/spark/deploy/k8s/Constants.scala, 3.5 and 4.x).
const (
	LabelRole              = "spark-role"                    // the user writes "driver" (the webhook's objectSelector reads it); the sidecar writes "executor"
	LabelAppID             = "spark-app-selector"            // the webhook writes the application id on the driver, the sidecar on executors; Spark, the sidecar and `sparklet check` read it
	LabelExecID            = "spark-exec-id"                 // Spark writes the executor id on the executor pods it asks for; operators read it
	LabelResourceProfileID = "spark-exec-resourceprofile-id" // Spark writes the executor's resource profile id ("0": the default profile) and counts its executors per profile by it; the sidecar reads it to judge executors of other profiles by their own size
)

// Spark's own annotation on the driver pod (Constants.scala, 4.1+).
const AnnotationExitException = "spark.exit-exception" // Spark writes the exception that ended the application, through the sidecar, which lets the driver patch only this on its pod; users read it

// sparklet's labels.
const (
	LabelInject    = "sparklet.io/inject"     // the operator writes "enabled" on a namespace; the chart's namespaceSelector and `sparklet check` read it
	LabelManaged   = "sparklet.io/managed"    // the sidecar writes "true" on the executors it created; operators select them with it
	LabelKeptUntil = "sparklet.io/kept-until" // the sidecar writes it on a failed executor it keeps for the policy's logs.keepFailedExecutorsSeconds: the Unix time until which; its cleanup leaves such pods; the sidecar, or when the driver ended first the webhook (--reap-kept-executors), deletes the pod once that time has passed
	LabelUIFor     = "sparklet.io/ui-for"     // the sidecar writes the driver's name on its Spark UI Service; the sidecar reads it
	// LabelDriverApp: the sidecar of a driver whose every JVM is an application of its own writes the driver pod's
	// spark-app-selector on the executors, ConfigMaps and PVCs of each; it watches and cleans up by it
	LabelDriverApp = "sparklet.io/driver-app"
	// LabelConnectServer: the webhook writes the name of the Spark Connect server a pod runs (its Deployment's or
	// StatefulSet's, else the pod's) on the pod; the server's Service selects its pods by it
	LabelConnectServer = "sparklet.io/connect-server"
)

// sparklet's annotations on a driver pod, and on the executors the sidecar
// creates.
const (
	AnnotationInject             = "sparklet.io/inject"              // the user writes "false" to opt a pod out; the webhook reads it
	AnnotationContainer          = "sparklet.io/container"           // the user names the Spark container; the webhook reads it
	AnnotationSparkConf          = "sparklet.io/spark-conf"          // the user's Spark conf, spark-defaults format; the webhook and the conf init container read it
	AnnotationFetch              = "sparklet.io/fetch"               // the user lists remote dependencies; the webhook and `sparklet init` read it
	AnnotationUI                 = "sparklet.io/ui"                  // the user writes "true" or "false" for a Spark UI Service; the webhook and the sidecar read it
	AnnotationBatchScheduler     = "sparklet.io/batch-scheduler"     // the user picks a batch scheduler; the webhook reads it
	AnnotationQueue              = "sparklet.io/queue"               // the user picks the scheduler's queue; the webhook reads it
	AnnotationPlaceholderTimeout = "sparklet.io/placeholder-timeout" // the user sets the gang's placeholder timeout; the webhook reads it
	AnnotationEffectiveConf      = "sparklet.io/effective-conf"      // the webhook writes what the layers set beyond the spark-conf; the conf init container (for the JVM) and the sidecar read it
	AnnotationScheduling         = "sparklet.io/scheduling"          // the webhook writes the scheduler, queue and gang; the sidecar reads it and stamps executors
	AnnotationStatus             = "sparklet.io/status"              // the webhook writes what it injected; the webhook (on reinvocation) and `sparklet check` read it
	AnnotationUIURL              = "sparklet.io/ui-url"              // the sidecar writes the Spark UI's address; users and `sparklet check` read it
	AnnotationConnectService     = "sparklet.io/connect-service"     // the user writes "true" or "false" for a Spark Connect server's Service; the webhook and the sidecar read it
	AnnotationConnectURL         = "sparklet.io/connect-url"         // the sidecar writes the Connect Service's address; users and `sparklet check` read it
	AnnotationConnectRouteURL    = "sparklet.io/connect-route-url"   // the sidecar writes the address of the Connect server's GRPCRoute's first hostname through a Gateway, sc://HOST:443; users and `sparklet check` read it
	AnnotationHistoryURL         = "sparklet.io/history-url"         // the sidecar writes the application's page on the policy's history server (history.url), once it ships the event log and knows the app id; users and `sparklet check` read it
	AnnotationEnded              = "sparklet.io/ended"               // the sidecar writes how the application ended, "<class>: <message>" (the classes below); users and `sparklet check` read it
)

// How an application ended, as the sidecar classifies it when the Spark
// container ends: the reason of its Event on the driver pod, the start of
// sparklet.io/ended, and the type (ConditionPrefix + class, status True)
// of the pod condition it writes on the driver pod; users and a Job's
// podFailurePolicy (onPodConditions) read them.
const (
	ConditionPrefix            = "sparklet.io/"            // the prefix of the driver pod's condition types, as sparklet.io/UserError
	EndSucceeded               = "Succeeded"               // the Spark container exited 0
	EndUserError               = "UserError"               // the JVM exited non-zero for none of the reasons below: the application's own failure
	EndDriverOOMKilled         = "DriverOOMKilled"         // the kubelet killed the Spark container at its memory limit
	EndDriverKilled            = "DriverKilled"            // the Spark container ended on a signal (the pod deleted, evicted, its deadline) or was still running when the sidecar was stopped
	EndExecutorsOOMKilled      = "ExecutorsOOMKilled"      // the JVM failed after executors were lost to OOM (OOMKilled, or Spark's OutOfMemoryError exit code 52)
	EndQuotaRefused            = "QuotaRefused"            // the JVM failed after a ResourceQuota refused executors it asked for
	EndPolicyRefused           = "PolicyRefused"           // the JVM failed after the sparklet policy, its limits or the API server's admission refused executors it asked for
	EndExecutorsNeverScheduled = "ExecutorsNeverScheduled" // the JVM failed or was killed with no executor ever scheduled, the first having waited past the policy's sidecar.executorScheduleDeadlineSeconds
)

// The env contract between the webhook and the sidecar: the webhook writes
// these in the sidecar container; `sparklet sidecar` reads them.
const (
	EnvPodName          = "SPARKLET_POD_NAME"          // the driver pod's name (also set in the Spark container, whose conf refers to it as ${env:...})
	EnvPodNamespace     = "SPARKLET_POD_NAMESPACE"     // the driver pod's namespace
	EnvListen           = "SPARKLET_LISTEN"            // the address of the JVM's API, on 127.0.0.1
	EnvMetricsListen    = "SPARKLET_METRICS_LISTEN"    // the address of /metrics, /readyz and /healthz
	EnvTokenFile        = "SPARKLET_TOKEN_FILE"        // where the sidecar writes the JVM's per-pod token
	EnvSparkContainer   = "SPARKLET_SPARK_CONTAINER"   // the Spark container, watched for termination
	EnvPolicy           = "SPARKLET_POLICY"            // the namespace's effective policy, as JSON
	EnvConfSHA256       = "SPARKLET_CONF_SHA256"       // the digest of the conf the webhook delivered to the JVM
	EnvSchedulingSHA256 = "SPARKLET_SCHEDULING_SHA256" // the digest of the sparklet.io/scheduling the webhook wrote (of "" for none); absent in pods injected before it
	EnvAppPerJVM        = "SPARKLET_APP_PER_JVM"       // "true" when every JVM of the Spark container is an application of its own (restartPolicy Always or OnFailure); absent otherwise
	EnvConnectListen    = "SPARKLET_CONNECT_LISTEN"    // where the sidecar serves Spark Connect clients (":15002"); absent unless the driver is a Spark Connect server
	EnvConnectBackend   = "SPARKLET_CONNECT_BACKEND"   // the JVM's Connect port on 127.0.0.1, which the sidecar forwards admitted clients to; set with EnvConnectListen
	EnvConnectNoToken   = "SPARKLET_CONNECT_NO_TOKEN"  // "true" when the JVM's Connect port checks no token (Spark 3.5): the sidecar writes none and forwards admitted clients without one; absent otherwise
	EnvConnectTLSDir    = "SPARKLET_CONNECT_TLS_DIR"   // the directory of the sidecar's Connect certificate (tls.crt, tls.key), mounted from the policy's connect.tlsSecretName: the sidecar then serves Connect clients over TLS only; absent for cleartext
	EnvEventLogDir      = "SPARKLET_EVENT_LOG_DIR"     // the directory the JVM writes its event logs to, which the sidecar ships to the policy's history store; absent when it ships none
)

// The webhook's env in the other containers it injects or changes.
const (
	EnvFetchPolicy  = "SPARKLET_FETCH_POLICY"   // the webhook writes the fetch policy as JSON in the init container; `sparklet init` reads it
	EnvImageConfDir = "SPARKLET_IMAGE_CONF_DIR" // the webhook writes the image's conf directory in the conf init container; its script reads it
	EnvPodIP        = "SPARKLET_POD_IP"         // the webhook writes it in the Spark container; the JVM reads it through the effective conf's ${env:...}
	EnvUserPrefix   = "SPARKLET_USER_"          // the webhook moves the Spark container's own NO_PROXY and no_proxy to this prefix; the variables refer back to it as $(...)
)
