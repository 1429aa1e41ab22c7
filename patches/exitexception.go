package patches

// KeyAnnotateExitException turns on Spark's exit-exception annotation:
// when the application's main method throws, SparkSubmit has
// SparkKubernetesDiagnosticsSetter write the exception's text, cut to
// 64 KiB, on the driver pod as the annotation vocab.AnnotationExitException
// (SparkSubmit.scala and SparkKubernetesDiagnosticsSetter.scala; config
// .version("4.1.0") in Config.scala; read in the 4.3.0 jars, where the
// write is a strategic-merge PATCH of the driver pod). Its client is built
// from spark.kubernetes.driver.master and the
// spark.kubernetes.authenticate.driver.mounted.* keys, which finishConf
// points at the sidecar. The sidecar lets the driver patch exactly this
// annotation on its own pod.
const KeyAnnotateExitException = "spark.kubernetes.driver.annotateExitException"

// exitExceptionSince is the first line that reads the key: sparklet turns
// it on by default there, below every policy and user layer.
var exitExceptionSince = sparkLine{4, 1}
