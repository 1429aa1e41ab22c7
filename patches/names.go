package patches

import "github.com/sparklet/sparklet/policy"

// Labels and annotations sparklet reads and writes.
const (
	LabelRole   = "spark-role"         // Spark's own: "driver" or "executor"
	LabelAppID  = "spark-app-selector" // Spark's own: the application id
	LabelExecID = "spark-exec-id"      // Spark's own: the executor id

	AnnotationInject        = "sparklet.io/inject"         // "false" opts a pod out
	AnnotationContainer     = "sparklet.io/container"      // names the Spark container
	AnnotationSparkConf     = "sparklet.io/spark-conf"     // the user's Spark conf, spark-defaults format
	AnnotationEffectiveConf = "sparklet.io/effective-conf" // what the layers set beyond the spark-conf; the JVM reads both
	AnnotationStatus        = "sparklet.io/status"         // what was injected
	LabelManaged            = "sparklet.io/managed"        // "true" on executors the sidecar created
)

// DefaultAllocationBatchSize is sparklet's default for
// spark.kubernetes.allocation.batch.size; policy and pod may override it.
// Spark creates at most one batch per allocator round and starts the next
// round only after a tick (spark.kubernetes.allocation.batch.delay) in
// which it has seen every pod of the last batch, so a small batch leaves
// the JVM idle between rounds. The sidecar paces the creates itself
// (sidecar.createQPS and createConcurrency in the policy), so the batch
// need not protect the API server.
const DefaultAllocationBatchSize = 1000

// Names and paths of what sparklet injects.
const (
	SidecarName   = "sparklet-sidecar"
	InitName      = "sparklet-init"
	ConfInitName  = "sparklet-spark-conf"
	VolumeConf    = "sparklet-conf"
	VolumeSpark   = "sparklet-spark-conf" // the Spark container's SPARK_CONF_DIR
	VolumeJVM     = "sparklet-jvm"
	VolumeToken   = "sparklet-sa-token"
	VolumeDeps    = "sparklet-deps"
	VolumeHadoop  = "sparklet-hadoop-conf"
	VolumeLocal   = "spark-local-dir-" // followed by 1, 2, ...
	VolumeCredPfx = "sparklet-cred-"   // followed by the credential's name

	ConfDir               = "/opt/sparklet/conf"
	ConfFile              = "spark-defaults.conf"
	FetchFile             = "fetch"
	PodInfoDir            = "/etc/sparklet/podinfo"
	JVMDir                = policy.JVMDir
	TokenFile             = policy.JVMTokenFile
	ServiceAccount        = "/var/run/secrets/kubernetes.io/serviceaccount"
	HadoopConfDir         = "/opt/hadoop/conf"
	LocalDirRoot          = "/var/data/"
	CredentialsRoot       = "/var/run/secrets/sparklet/"
	sidecarUID      int64 = 65532
)
