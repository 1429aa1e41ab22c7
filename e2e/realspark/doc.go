// Package realspark runs stock Spark JVMs through the webhook and the sidecar.
//
// The pinned distributions of hack/spark/versions play the
// apache/spark images, and the pod runner plays the kubelet. It runs when
// SPARKLET_E2E=1 (make test sets it), as root, and then fails, rather than
// skips, if a binary or a distribution is missing.
//
// Tests that spend most of their time waiting (on Spark's own timers: idle
// and session timeouts, the resize plugin's interval, a kept executor's
// window; on a CronJob's runs, a sleeping job, a refused profile) call
// t.Parallel and so run together after the others; each has its own
// namespace and policy section and touches nothing cluster-wide. Tests
// that restart the API server, install a scheduler, or bound a time
// (executors gone within 5 s of a JVM's kill) stay sequential.
// make test runs four of them at a time (go test -parallel 4).
//
// Each claim is proven once per run, on the real node when this machine
// runs one. A test or subtest whose claim an e2e/node subtest proves skips
// when e2e/node runs here (test/e2egate.ProvenOnNode, on e2e/node's own
// check), naming that subtest: TestSparkPi, TestPySpark and TestSparkPiJob,
// and the nodeSparkVersion subtests of TestDriverKilled, TestSidecarKilled,
// TestAPIServerRestart and TestDynamicAllocation. SPARKLET_POD_RUNNER_ALL=1
// runs them here too.
package realspark
