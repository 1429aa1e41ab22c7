package patches

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

	ConfDir                = "/opt/sparklet/conf"
	ConfReadyFile          = ConfDir + "/.sparklet-ready" // the conf container writes it once the conf is in place (confContainerScript)
	ConfFile               = "spark-defaults.conf"
	FetchFile              = "fetch"
	PodInfoDir             = "/etc/sparklet/podinfo"
	JVMDir                 = "/var/run/sparklet/jvm" // the in-memory volume the sidecar and the Spark container share
	TokenFile              = JVMDir + "/token"       // the JVM's per-pod token, which the sidecar writes
	ServingFile            = JVMDir + "/serving"     // the sidecar writes it once it listens for the JVM (waitForSidecar)
	ConnectTokenFile       = JVMDir + "/connect"     // the Spark Connect server's token, which the sidecar writes and forwards clients with
	ServiceAccount         = "/var/run/secrets/kubernetes.io/serviceaccount"
	HadoopConfDir          = "/opt/hadoop/conf"
	LocalDirRoot           = "/var/data/"
	CredentialsRoot        = "/var/run/secrets/sparklet/"
	sidecarUID       int64 = 65532
)
