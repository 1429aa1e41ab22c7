"""Counts generated numbers per key: a groupBy with a shuffle.

examples/pyspark-pod.yaml fetches this script. It prints one line per key,

    key-0 count=200 sum=100500

and then the executor pods whose Python workers computed the keys.
"""

import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

N, KEYS, PARTITIONS = 1000, 5, 4


def record(n):
    # A Python function: Spark runs it in Python workers on the executors,
    # whose env names the executor's pod.
    return (f"key-{n % KEYS}", n, os.environ.get("SPARK_EXECUTOR_POD_NAME", "no-executor"))


spark = SparkSession.builder.appName("groupcount").getOrCreate()
rows = (
    spark.sparkContext.parallelize(range(1, N + 1), PARTITIONS)
    .map(record)
    .toDF("key string, n long, pod string")
)
counts = rows.groupBy("key").agg(
    F.count("*").alias("count"), F.sum("n").alias("sum"), F.collect_set("pod").alias("pods")
)
result = sorted(counts.collect(), key=lambda r: r["key"])
# Spark runs this script unbuffered and copies its output into the driver's
# log: print's separate write of the newline would let a JVM log line land
# inside ours, so each line is one write.
for r in result:
    sys.stdout.write(f"{r['key']} count={r['count']} sum={r['sum']}\n")
sys.stdout.write("Python workers ran in: " + " ".join(sorted({p for r in result for p in r["pods"]})) + "\n")
spark.stop()
