// Package submitargs reads a Spark container's command line as spark-submit
// reads it: the launcher (the image's entrypoint, spark-submit, pyspark,
// spark-shell, spark-sql, python, a shell's -c script), spark-submit's
// options up to the primary resource, and the Spark conf those options set;
// and the routes into the JVM's configuration that the command line does
// not show (JVM option strings, spark-submit's env fallbacks,
// PYSPARK_SUBMIT_ARGS) and the kubelet's $(VAR) expansion.
package submitargs
