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
// address of the pod, and forwards the clients it admits to the JVM, which
// listens on 127.0.0.1 only and takes only the token the sidecar writes.
const (
	// ConnectPort is where clients connect, Spark's default
	// (ConnectCommon.CONNECT_GRPC_BINDING_PORT).
	ConnectPort = 15002
	// ConnectJVMPort is the JVM's Connect port, on 127.0.0.1.
	ConnectJVMPort = 15102
)

// connectAuthSince is the first Spark line whose Connect server binds an
// address of its choice (spark.connect.grpc.binding.address) and checks a
// token (spark.connect.authenticate.token or SPARK_CONNECT_AUTHENTICATE_TOKEN),
// both version 4.0.0 in sql/connect/server/.../config/Connect.scala; 3.5's
// binds every address (NettyServerBuilder.forPort) and checks nothing.
var connectAuthSince = sparkLine{4, 0}

// The Connect properties sparklet sets for a server whose clients the
// sidecar admits, and why a user may not.
var connectOwned = map[string]string{
	"spark.connect.grpc.binding.address": "the JVM listens on 127.0.0.1 and the sidecar serves clients on the pod's addresses",
	"spark.connect.grpc.binding.port": fmt.Sprintf("the sidecar serves clients on port %d and the JVM listens on 127.0.0.1:%d",
		ConnectPort, ConnectJVMPort),
	"spark.connect.authenticate.token": "the sidecar admits clients by their Kubernetes token and forwards them with a token of its own",
}

// planConnectAuth puts a Connect server on Spark 4.0+ behind the sidecar:
// the JVM binds 127.0.0.1:ConnectJVMPort and takes the token the sidecar
// writes (connectEnvScript). A server on 3.5 is left as it is, with a
// warning. It runs after planConnect.
func planConnectAuth(pod *corev1.Pod, p *plan) error {
	if p.connect == "" {
		return nil
	}
	c := p.container(pod)
	if !lineOfImage(c.Image).atLeast(connectAuthSince) {
		p.warn(fmt.Sprintf("container %q: a Spark %s Connect server listens on every address of the pod and checks no identity; "+
			"sparklet admits Connect clients by their Kubernetes identity on Spark 4.0+ only (docs/connect.md)", c.Name, imageVersion(c.Image)))
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(connectOwned)) {
		if v, ok := p.conf[k]; ok {
			return &Refused{Reason: "reserved-key", Message: fmt.Sprintf(
				"the Spark configuration sets %s=%s, but for a Spark Connect server %s; remove it (docs/connect.md)", k, redactToken(k, v), connectOwned[k])}
		}
	}
	p.conf["spark.connect.grpc.binding.address"] = "127.0.0.1"
	p.conf["spark.connect.grpc.binding.port"] = strconv.Itoa(ConnectJVMPort)
	p.connectAuth = true
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

// connectBackend is the JVM's Connect address, or "".
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
func connectEnvScript(p *plan) string {
	if !p.connectAuth {
		return ""
	}
	return `printf '\n%s\n' 'SPARK_CONNECT_AUTHENTICATE_TOKEN=$(cat ` + ConnectTokenFile + `) && export SPARK_CONNECT_AUTHENTICATE_TOKEN' >> "$dst/spark-env.sh"
`
}
