# A PySpark job with stage-level scheduling, for TestResourceProfiles.
# Arguments: TASKS SLEEP_MS IDLE_S (IDLE_S is unused). Two jobs of TASKS
# tasks, each sleeping SLEEP_MS, run at once: one on the default resource
# profile, one on a profile whose executors have 640m of heap. Their sums
# are printed; then one task asks for a profile whose executors have 1g of
# heap, over the namespace's limits.executor.maxMemory, and waits until the
# test deletes the driver.
import sys
import time

from pyspark import InheritableThread
from pyspark.resource import ExecutorResourceRequests, ResourceProfileBuilder, TaskResourceRequests
from pyspark.sql import SparkSession

tasks, sleep_ms, _ = (int(a) for a in sys.argv[1:4])
spark = SparkSession.builder.appName("profiles").getOrCreate()
sc = spark.sparkContext


def profile(memory):
    executor = ExecutorResourceRequests().cores(1).memory(memory)
    return ResourceProfileBuilder().require(executor).require(TaskResourceRequests().cpus(1)).build


def slow(i):
    time.sleep(sleep_ms / 1000)
    return i


sums = {}


def run(name, rp):
    rdd = sc.parallelize(range(tasks), tasks)
    if rp is not None:
        rdd = rdd.withResources(rp)
    sums[name] = rdd.map(slow).sum()


jobs = [InheritableThread(target=run, args=("default", None)), InheritableThread(target=run, args=("profile", profile("640m")))]
for j in jobs:
    j.start()
for j in jobs:
    j.join()
# One write per line (see sleepy.py).
sys.stdout.write(f"profiles: default sum {sums['default']}, profile sum {sums['profile']}\n")
sys.stdout.write("profiles: asking for an executor over the limit\n")
sc.parallelize(range(1), 1).withResources(profile("1g")).map(slow).collect()
sys.stdout.write("profiles: the executor over the limit ran\n")
