# A PySpark job for TestControllerAllocatorsRefused: it picks, in its own
# code where the webhook cannot see it, the executor allocator named in
# /opt/job/allocator, then counts a range on executors.
from pyspark.sql import SparkSession

with open("/opt/job/allocator") as f:
    allocator = f.read().strip()
spark = SparkSession.builder.appName("allocator").config("spark.kubernetes.allocation.pods.allocator", allocator).getOrCreate()
print(f"allocator: counted {spark.range(0, 10, 1, 2).count()}", flush=True)
spark.stop()
