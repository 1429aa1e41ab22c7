#!/bin/bash
# /opt/entrypoint.sh of the apache/spark images hack/nodeimages builds.
# Written for sparklet to behave as the official images' entrypoint
# (apache/spark-docker, entrypoint.sh.template, the same for every 3.5.x
# and 4.x image; test/sparkimage models it and checks this script against
# the model):
#
#   driver ARGS...  spark-submit in client mode, bound to
#                   $SPARK_DRIVER_BIND_ADDRESS, with ARGS
#   executor        the executor JVM (KubernetesExecutorBackend) from the
#                   SPARK_* variables Spark sets on executor pods
#   anything else   run as it is
#
# The driver and the executor run under tini -s; started as root, they run
# as the user spark (gosu); under a uid without a passwd entry, nss_wrapper
# gives them one.
set -eo pipefail

# fake_passwd_entry gives the current uid a passwd entry named spark, and
# its gid a group, through libnss_wrapper when it has none: a random uid,
# as OpenShift assigns, otherwise breaks tools that look the user up.
fake_passwd_entry() {
  local uid gid lib
  uid=$(id -u)
  if getent passwd "$uid" >/dev/null 2>&1; then
    return 0
  fi
  for lib in /usr/lib/*/libnss_wrapper.so /usr/lib/libnss_wrapper.so /lib/*/libnss_wrapper.so /lib/libnss_wrapper.so; do
    if [ ! -s "$lib" ]; then
      continue
    fi
    gid=$(id -g)
    NSS_WRAPPER_PASSWD=$(mktemp)
    NSS_WRAPPER_GROUP=$(mktemp)
    export LD_PRELOAD=$lib NSS_WRAPPER_PASSWD NSS_WRAPPER_GROUP
    echo "spark:x:$uid:$gid:${SPARK_USER_NAME:-anonymous uid}:$SPARK_HOME:/bin/false" >"$NSS_WRAPPER_PASSWD"
    echo "spark:x:$gid:" >"$NSS_WRAPPER_GROUP"
    return 0
  done
}

if [ -z "$JAVA_HOME" ]; then
  JAVA_HOME=$(java -XshowSettings:properties -version 2>&1 >/dev/null | awk '$1 == "java.home" { print $3 }')
fi

# The executor's JVM options: SPARK_EXECUTOR_JAVA_OPTS as one argument if
# set, then each SPARK_JAVA_OPT_<n> in the order bash lists the names.
executor_java_opts=()
if [ -n "${SPARK_EXECUTOR_JAVA_OPTS+set}" ]; then
  executor_java_opts+=("$SPARK_EXECUTOR_JAVA_OPTS")
fi
for name in "${!SPARK_JAVA_OPT_@}"; do
  executor_java_opts+=("${!name}")
done

# The executor's classpath: the conf dir (SPARK_CONF_DIR, else
# $SPARK_HOME/conf), HADOOP_CONF_DIR, SPARK_CLASSPATH, the jars,
# SPARK_EXTRA_CLASSPATH and the working directory.
classpath="$SPARK_CLASSPATH:$SPARK_HOME/jars/*"
if [ -n "$SPARK_EXTRA_CLASSPATH" ]; then
  classpath="$classpath:$SPARK_EXTRA_CLASSPATH"
fi
if [ -n "${HADOOP_CONF_DIR+set}" ]; then
  classpath="$HADOOP_CONF_DIR:$classpath"
fi
if [ -n "${SPARK_CONF_DIR+set}" ]; then
  classpath="$SPARK_CONF_DIR:$classpath"
elif [ -n "${SPARK_HOME+set}" ]; then
  classpath="$SPARK_HOME/conf:$classpath"
fi
classpath="$classpath:$PWD"

for name in PYSPARK_PYTHON PYSPARK_DRIVER_PYTHON; do
  if [ -n "${!name+set}" ]; then
    export "${name?}"
  fi
done
if [ -n "$HADOOP_HOME" ] && [ -z "$SPARK_DIST_CLASSPATH" ]; then
  SPARK_DIST_CLASSPATH=$("$HADOOP_HOME/bin/hadoop" classpath)
  export SPARK_DIST_CLASSPATH
fi

as_spark=()
if [ "$(id -u)" -eq 0 ]; then
  as_spark=(gosu spark)
fi

case "$1" in
driver)
  shift
  fake_passwd_entry
  exec "${as_spark[@]}" /usr/bin/tini -s -- \
    "$SPARK_HOME/bin/spark-submit" \
    --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
    --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
    --deploy-mode client \
    "$@"
  ;;
executor)
  shift
  fake_passwd_entry
  exec "${as_spark[@]}" /usr/bin/tini -s -- \
    "$JAVA_HOME/bin/java" \
    "${executor_java_opts[@]}" \
    "-Xms$SPARK_EXECUTOR_MEMORY" \
    "-Xmx$SPARK_EXECUTOR_MEMORY" \
    -cp "$classpath:$SPARK_DIST_CLASSPATH" \
    org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
    --driver-url "$SPARK_DRIVER_URL" \
    --executor-id "$SPARK_EXECUTOR_ID" \
    --cores "$SPARK_EXECUTOR_CORES" \
    --app-id "$SPARK_APPLICATION_ID" \
    --hostname "$SPARK_EXECUTOR_POD_IP" \
    --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" \
    --podName "$SPARK_EXECUTOR_POD_NAME"
  ;;
*)
  exec "$@"
  ;;
esac
