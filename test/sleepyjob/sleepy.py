# A PySpark job for the failure and dynamic-allocation tests (package
# sleepyjob). Arguments: TASKS SLEEP_MS IDLE_S. It runs TASKS tasks that each
# sleep SLEEP_MS in the executor's JVM (SQL reflect: no Python worker on the
# executors), sums the ids through a shuffle, prints the sum, then idles
# IDLE_S seconds with no work before it stops.
import sys
import time

from pyspark.sql import SparkSession

tasks, sleep_ms, idle = (int(a) for a in sys.argv[1:4])
spark = SparkSession.builder.appName("sleepy").getOrCreate()
# reflect returns the string "null" for a void method: 4 characters.
total = (
    spark.range(0, tasks, 1, tasks)
    .selectExpr(f"id + length(reflect('java.lang.Thread', 'sleep', cast({sleep_ms} AS BIGINT))) - 4 AS v")
    .groupBy()
    .sum("v")
    .collect()[0][0]
)
# One write per line: Spark runs this unbuffered and copies its output between
# the JVM's log lines, which print's separate newline write would let in.
sys.stdout.write(f"sleepy: sum of ids is {total}\n")
time.sleep(idle)
sys.stdout.write("sleepy: done\n")
spark.stop()
