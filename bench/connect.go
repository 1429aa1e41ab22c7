package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	testenv "github.com/sparklet/sparklet/test/env"
)

// connectCommand is `bench connect`: examples/connect-deployment.yaml, a
// Spark Connect server as a Deployment, on the newest pin on the pod
// runner, timed from its kubectl apply to the first query's result through
// the sidecar, with the official Python client (make connect-client)
// holding the token of a ServiceAccount a Role allows to connect.
const connectCommand = "connect"

const (
	// connectStarted is what SparkConnectServer logs once it serves.
	connectStarted = "Spark Connect server started at"
	// connectQuery is the first query: a groupBy count with a shuffle.
	connectQuery = `import sys
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
print("RESULT", spark.range(0, 1000, 1, 4).groupBy((F.col("id") % 3).alias("k")).count().count())
`
)

// connectRun is one server's start, measured from kubectl apply.
type connectRun struct {
	started, result time.Duration
}

func connectMain(args []string) error {
	fs := flag.NewFlagSet("bench connect", flag.ContinueOnError)
	bin := fs.String("bin", "bin", "sparklet, the control plane's binaries and spark/")
	dir := fs.String("dir", ".cache/bench-connect", "state and logs")
	out := fs.String("out", "bench/results", "where connect.md goes")
	site := fs.String("client", ".cache/connect-client/site", "the Python client (make connect-client)")
	n := fs.Int("n", 3, "servers started one after the other, each in a namespace of its own")
	if err := parseCounted(fs, args, "-n", n); err != nil {
		return err
	}
	client, err := filepath.Abs(*site)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(client, "pyspark", "sql", "connect")); err != nil {
		return fmt.Errorf("no Spark Connect Python client in %s: run make connect-client", client)
	}
	manifest, err := os.ReadFile("examples/connect-deployment.yaml")
	if err != nil {
		return err
	}
	ctx := context.Background()
	env, _, absDir, d, err := prepareRunner(ctx, *bin, *dir)
	if err != nil {
		return err
	}
	defer env.Stop()
	manifest = d.Retarget(manifest)
	loadBefore := loadAverage()
	var runs []connectRun
	for i := range *n {
		ns := fmt.Sprintf("connect-%d", i+1)
		r, err := connectOnce(ctx, env, ns, absDir, manifest, client)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		fmt.Printf("bench connect: run %d: server started %v, first result %v after kubectl apply\n", i+1,
			r.started.Round(time.Millisecond), r.result.Round(time.Millisecond))
		runs = append(runs, r)
	}
	r := &report{}
	connectReport(r, runs, "apache/spark:"+d.Version, [2]string{loadBefore, loadAverage()}, serverVersion(env))
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "connect.md"), []byte(r.b.String()), 0o644)
}

// connectOnce applies the Deployment in a new namespace ns, waits for the
// server to start and runs the first query through the sidecar, its
// script in dir.
func connectOnce(ctx context.Context, env *testenv.Env, ns, dir string, manifest []byte, client string) (connectRun, error) {
	var r connectRun
	if err := env.CreateNamespace(ctx, ns, true); err != nil {
		return r, err
	}
	token, err := connectGrant(ctx, env, ns)
	if err != nil {
		return r, err
	}
	start := time.Now()
	if _, errOut, err := env.Kubectl(ctx, manifest, "apply", "-n", ns, "-f", "-"); err != nil {
		return r, fmt.Errorf("kubectl apply: %v: %s", err, errOut)
	}
	defer func() {
		_, _, _ = env.Kubectl(context.Background(), nil, "delete", "deployment", "spark-connect", "-n", ns, "--wait=false")
	}()
	var ip string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=spark-connect"})
		if err != nil || len(list.Items) != 1 || list.Items[0].Status.PodIP == "" {
			return false, nil
		}
		log, _ := os.ReadFile(env.Runner.LogPath(ns, list.Items[0].Name, "spark"))
		ip = list.Items[0].Status.PodIP
		return bytes.Contains(log, []byte(connectStarted)), nil
	})
	if err != nil {
		return r, fmt.Errorf("the server never logged %q: %w", connectStarted, err)
	}
	r.started = time.Since(start)
	cctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	// A script file, not python3 -c: pyspark looks for a Spark home
	// from the script's directory and fails in none.
	script := filepath.Join(dir, "query.py")
	if err := os.WriteFile(script, []byte(connectQuery), 0o644); err != nil {
		return r, err
	}
	cmd := exec.CommandContext(cctx, "python3", "-W", "ignore", script,
		"sc://"+ip+":15002/;authorization="+url.PathEscape("Bearer "+token))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+client)
	output, err := cmd.CombinedOutput()
	if !strings.Contains(string(output), "RESULT 3\n") {
		return r, fmt.Errorf("the client printed no RESULT 3 (%v):\n%s", err, output)
	}
	r.result = time.Since(start)
	return r, nil
}

// connectGrant lets the namespace's drivers review tokens (the chart's
// connect ClusterRoleBinding), makes a ServiceAccount a Role allows to
// connect, and returns a token of it.
func connectGrant(ctx context.Context, env *testenv.Env, ns string) (string, error) {
	grant := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: sparklet-connect-%[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{kind: ServiceAccount, name: %[2]s, namespace: %[1]s}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: notebook, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: spark-connect-user, namespace: %[1]s}
rules: [{apiGroups: [sparklet.io], resources: [sparkconnect], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: notebook-connect, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: spark-connect-user}
subjects: [{kind: ServiceAccount, name: notebook, namespace: %[1]s}]
`, ns, testenv.DriverServiceAccount)
	if _, errOut, err := env.Kubectl(ctx, []byte(grant), "apply", "-f", "-"); err != nil {
		return "", fmt.Errorf("kubectl apply the Connect RBAC: %v: %s", err, errOut)
	}
	exp := int64(3600)
	tr, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "notebook", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	if tr.Status.Token == "" {
		return "", errors.New("the TokenRequest returned no token")
	}
	return tr.Status.Token, nil
}

func connectReport(r *report, runs []connectRun, image string, load [2]string, server string) {
	r.line("# bench connect: a Spark Connect server from kubectl apply to its first query's result")
	r.line("")
	r.line("`examples/connect-deployment.yaml` with %s on the pod runner (Kubernetes %s, load %s before, %s after), "+
		"each run in a namespace of its own: the time from `kubectl apply` to the server's `%s` line, and to the first query's result "+
		"(a groupBy count over 4 partitions, the official Python client, `pyspark-client` from `make connect-client`, "+
		"through the sidecar with a ServiceAccount token; the client's Python start-up and its session included).", image, server, load[0], load[1], connectStarted)
	r.line("")
	var started, result []time.Duration
	var rows []string
	for i, run := range runs {
		started, result = append(started, run.started), append(result, run.result)
		rows = append(rows, fmt.Sprintf("| %d | %.1f s | %.1f s |", i+1, run.started.Seconds(), run.result.Seconds()))
	}
	rows = append(rows, fmt.Sprintf("| median | %.1f s | %.1f s |", median(started).Seconds(), median(result).Seconds()))
	r.table("| run | server started | first result |", rows)
}
