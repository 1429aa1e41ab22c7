"""One task writes /opt/job/fill MiB into the first of its local
directories (SPARK_LOCAL_DIRS: PySpark gives its workers the block
manager's directories, here on the executor's spark-local-dir-* PVCs), so
that the file system behind it is fuller than the PVC resize plugin's
threshold. The file stays, with the executor, while the application holds
until the URL in /opt/job/gate answers."""

import os
import sys
import urllib.request

from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("pvc-resize").getOrCreate()
with open("/opt/job/fill") as f:
    mib = int(f.read())


def fill(_):
    local = os.environ["SPARK_LOCAL_DIRS"].split(",")[0]
    path = os.path.join(local, "pvc-resize-fill")
    with open(path, "wb") as out:
        for _ in range(mib):
            out.write(b"\xff" * (1 << 20))
        out.flush()
        os.fsync(out.fileno())
    return [path]


written = spark.sparkContext.parallelize([0], 1).mapPartitions(fill).collect()
sys.stdout.write("pvc-resize: wrote %d MiB to %s\n" % (mib, written[0]))
sys.stdout.flush()
with open("/opt/job/gate") as gate:
    urllib.request.urlopen(gate.read().strip(), timeout=1800).read()
spark.stop()
