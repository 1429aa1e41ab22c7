package patches

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// The sidecar admits a Spark Connect server's clients by their Kubernetes
// identity (docs/connect.md): it serves the port clients use on every
// address of the pod, and forwards the clients it admits to the JVM's
// port, which on Spark 4.0+ listens on 127.0.0.1 only and takes only the
// token the sidecar writes.
const (
	// ConnectPort is where clients connect, Spark's default
	// (ConnectCommon.CONNECT_GRPC_BINDING_PORT).
	ConnectPort = 15002
	// ConnectJVMPort is the JVM's Connect port: on 127.0.0.1 for Spark
	// 4.0+, on every address of the pod for 3.5.
	ConnectJVMPort = 15102
)

// connectAuthSince is the first Spark line whose Connect server binds an
// address of its choice (spark.connect.grpc.binding.address) and checks a
// token (spark.connect.authenticate.token or SPARK_CONNECT_AUTHENTICATE_TOKEN),
// both version 4.0.0 in sql/connect/server/.../config/Connect.scala. 3.5's
// has spark.connect.grpc.binding.port alone and binds it on every address
// (SparkConnectService.startGRPCService: NettyServerBuilder.forPort;
// spark-connect_2.12 3.5.7's Connect$ and SparkConnectService$ classes),
// and checks nothing.
var connectAuthSince = sparkLine{4, 0}

// The Connect properties sparklet sets for a server whose clients the
// sidecar admits, and why a user may not.
var connectOwned = map[string]string{
	"spark.connect.grpc.binding.address": "the JVM listens on 127.0.0.1 and the sidecar serves clients on the pod's addresses",
	"spark.connect.grpc.binding.port": fmt.Sprintf("the sidecar serves clients on port %d and the JVM listens on port %d",
		ConnectPort, ConnectJVMPort),
	"spark.connect.authenticate.token": "the sidecar admits clients by their Kubernetes token and forwards them with a token of its own",
}

// planConnectAuth puts a Connect server behind the sidecar: the JVM binds
// ConnectJVMPort, on 127.0.0.1 with the token the sidecar writes
// (connectEnvScript) on Spark 4.0+. A 3.5 JVM binds that port on every
// address and checks no token, so what reaches the pod IP on it bypasses
// the sidecar: its user is told, and what closes it (docs/connect.md). It
// runs after planConnect.
func planConnectAuth(pod *corev1.Pod, p *plan) error {
	if p.connect == "" {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(connectOwned)) {
		if v, ok := p.conf[k]; ok {
			return &Refused{Reason: "reserved-key", Message: fmt.Sprintf(
				"the Spark configuration sets %s=%s, but for a Spark Connect server %s; remove it (docs/connect.md)", k, redactToken(k, v), connectOwned[k])}
		}
	}
	c := p.container(pod)
	p.conf["spark.connect.grpc.binding.port"] = strconv.Itoa(ConnectJVMPort)
	p.connectAuth = true
	if !lineOfImage(c.Image).atLeast(connectAuthSince) {
		// Kept short: the API server may truncate a warning over 256
		// characters.
		p.warn(fmt.Sprintf("container %q: a Spark %s Connect server binds port %d on every address of the pod and checks no token: "+
			"close it to other pods with a NetworkPolicy (docs/connect.md#spark-35)", c.Name, imageVersion(c.Image), ConnectJVMPort))
		return nil
	}
	p.conf["spark.connect.grpc.binding.address"] = "127.0.0.1"
	p.connectJVMToken = true
	return nil
}

func redactToken(key, value string) string {
	if key == "spark.connect.authenticate.token" {
		return "(redacted)"
	}
	return value
}

// connectListen is where the sidecar serves Connect clients, or "".
func (p *plan) connectListen() string {
	if !p.connectAuth {
		return ""
	}
	return ":" + strconv.Itoa(ConnectPort)
}

// connectBackend is the JVM's Connect address, or "": 127.0.0.1, which a
// 3.5 JVM listens on too.
func (p *plan) connectBackend() string {
	if !p.connectAuth {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ConnectJVMPort))
}

// connectEnvScript is what the conf init container adds for a Connect
// server behind the sidecar: a line in spark-env.sh that exports the
// token the sidecar writes as SPARK_CONNECT_AUTHENTICATE_TOKEN, which the
// server reads when spark.connect.authenticate.token is unset
// (Connect.getAuthenticateToken, 4.0.0 to 4.3.0). spark-class sources
// spark-env.sh from SPARK_CONF_DIR (bin/load-spark-env.sh) when the JVM
// starts, after the sidecar, a native sidecar, has written the token. So
// the token is in no pod field and no Spark property a client can read.
// Like confScript, it starts from the image's own file, so a conf
// container restarted before it was done writes the same file again.
func connectEnvScript(p *plan) string {
	if !p.connectJVMToken {
		return ""
	}
	return `{
  if [ -f "$src/spark-env.sh" ]; then cat "$src/spark-env.sh"; fi
  printf '\n%s\n' 'SPARK_CONNECT_AUTHENTICATE_TOKEN=$(cat ` + ConnectTokenFile + `) && export SPARK_CONNECT_AUTHENTICATE_TOKEN'
} > "$dst/.sparklet-env.tmp"
mv "$dst/.sparklet-env.tmp" "$dst/spark-env.sh"
`
}
