"""Runs one small job on the executors, then keeps the application (and
its Spark UI) up until the URL given as the first argument answers."""

import sys
import urllib.request

from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("held-open").getOrCreate()
sys.stdout.write(f"counted {spark.sparkContext.parallelize(range(100), 2).count()}\n")
urllib.request.urlopen(sys.argv[1], timeout=300).read()
spark.stop()
