# A PySpark job for TestExecutorsOOMEnding: each task builds, in its
# executor's JVM, a string of 1.5 GiB, more than the executor's 512m heap.
# The length depends on the row, so the optimizer cannot fold it on the
# driver. The executor's JVM dies of the OutOfMemoryError (exit code 52),
# Spark retries the task on new executors until it gives up, and the
# application fails.
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("oom").getOrCreate()
print("oom: building", flush=True)
spark.range(0, 2, 1, 2).selectExpr("length(repeat('x', 1610612736 + id)) AS n").collect()
print("oom: not reached", flush=True)
