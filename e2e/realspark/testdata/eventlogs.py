# A PySpark job for the event-log tests. Arguments: JOBS SLEEP_MS IDLE_S.
# It runs JOBS small jobs with a 256 KiB local property, which Spark writes
# into the event log with each job's and stage's start event (about 512 KiB
# a job), so that the log rolls over; prints "eventlogs: padded"; then runs
# one job of 2 tasks that each sleep SLEEP_MS, idles IDLE_S seconds and
# stops.
import sys
import time

from pyspark.sql import SparkSession

jobs, sleep_ms, idle = (int(a) for a in sys.argv[1:4])
spark = SparkSession.builder.appName("eventlogs").getOrCreate()
sc = spark.sparkContext
sc.setLocalProperty("sparklet.test.padding", "x" * (256 * 1024))
for _ in range(jobs):
    sc.parallelize(range(2), 2).count()
sc.setLocalProperty("sparklet.test.padding", None)
sys.stdout.write("eventlogs: padded\n")


def nap(rows):
    time.sleep(sleep_ms / 1000)
    return rows


sc.parallelize(range(2), 2).mapPartitions(nap).count()
time.sleep(idle)
spark.stop()
