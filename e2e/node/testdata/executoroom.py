"""One job whose single task gathers rows of up to 100 KB into one list in
its executor's JVM (collect_list: no Python worker on the executors) until
the executor's container passes its memory limit. Once the job has failed,
it holds the application until the URL in /opt/job/gate answers, then
fails with the job's error."""

import sys
import urllib.request

from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("executor-oom").getOrCreate()
rows = spark.range(0, 100000, 1, 1).selectExpr("repeat(cast(id AS string), 20000) AS s")
try:
    rows.groupBy().agg({"s": "collect_list"}).collect()
    sys.stdout.write("executor-oom: not reached\n")
except Exception:
    sys.stdout.write("executor-oom: the job failed\n")
    with open("/opt/job/gate") as gate:
        urllib.request.urlopen(gate.read().strip(), timeout=600).read()
    raise
