"""Debian's python3-kubernetes, a client this project did not write, against
the sidecar: list, watch, create, patch and delete executor pods."""
import os
import sys

from kubernetes import client, watch

cfg = client.Configuration()
cfg.host = os.environ["SERVER"]
cfg.api_key = {"authorization": "Bearer " + os.environ["TOKEN"]}
api = client.CoreV1Api(client.ApiClient(cfg))
ns, app = os.environ["NS"], os.environ["APP"]


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


pods = api.list_namespaced_pod(ns, label_selector="spark-role=executor,spark-exec-id in (1)")
check([p.metadata.name for p in pods.items] == ["pi-exec-1"], "list by label")

executor = client.V1Pod(
    metadata=client.V1ObjectMeta(name="pi-exec-7", labels={
        "spark-app-selector": app, "spark-role": "executor", "spark-exec-id": "7"}),
    spec=client.V1PodSpec(restart_policy="Never", containers=[
        client.V1Container(name="spark-kubernetes-executor", image="apache/spark:3.5.4")]))
created = api.create_namespaced_pod(ns, executor)
check(created.metadata.name == "pi-exec-7" and created.metadata.owner_references[0].name == "pi", "create")

seen = set()
w = watch.Watch()
for event in w.stream(api.list_namespaced_pod, ns, label_selector="spark-role=executor", timeout_seconds=5):
    seen.add(event["object"].metadata.name)
    if {"pi-exec-1", "pi-exec-7"} <= seen:
        w.stop()
check({"pi-exec-1", "pi-exec-7"} <= seen, "watch saw %s" % sorted(seen))

patched = api.patch_namespaced_pod("pi-exec-1", ns, {"metadata": {"labels": {"spark-exec-inactive": "true"}}})
check(patched.metadata.labels.get("spark-exec-inactive") == "true", "patch")

api.delete_namespaced_pod("pi-exec-7", ns)
try:
    api.read_namespaced_pod("pi-exec-404", ns)
    check(False, "read of a missing pod")
except client.rest.ApiException as e:
    check(e.status == 404, "404 for a missing pod, got %s" % e.status)
print("ok")
