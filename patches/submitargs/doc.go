// Package submitargs reads a Spark container's command line as spark-submit
// reads it: the launcher (the image's entrypoint, spark-submit, pyspark,
// spark-shell, spark-sql, python, a shell's -c script), spark-submit's
// options up to the primary resource, and the Spark conf those options set.
package submitargs
