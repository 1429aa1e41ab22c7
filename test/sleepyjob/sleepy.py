# A PySpark job for the failure and dynamic-allocation tests (package
# sleepyjob). Arguments: TASKS SLEEP_MS IDLE_S [HOLD_MIB HOLD_S]. It runs
# TASKS tasks that each sleep SLEEP_MS in the executor's JVM (SQL reflect: no
# Python worker on the executors), sums the ids through a shuffle, prints the
# sum; with HOLD_MIB, one more task, in a Python worker on an executor, fills
# HOLD_MIB MiB of memory and holds it HOLD_S seconds; then it idles IDLE_S
# seconds with no work before it stops.
import sys
import time

from pyspark.sql import SparkSession

tasks, sleep_ms, idle = (int(a) for a in sys.argv[1:4])
hold_mib, hold_s = (int(a) for a in (sys.argv[4:6] or ["0", "0"]))
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


def hold(_):
    # Ones, not zeros: every page is written, so it is resident.
    block = b"\x01" * (hold_mib << 20)
    time.sleep(hold_s)
    return len(block) >> 20


if hold_mib > 0:
    held = spark.sparkContext.parallelize([0], 1).map(hold).collect()[0]
    sys.stdout.write(f"sleepy: held {held} MiB for {hold_s} s\n")
time.sleep(idle)
sys.stdout.write("sleepy: done\n")
spark.stop()
