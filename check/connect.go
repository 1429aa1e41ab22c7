package check

import (
	"context"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/vocab"
)

// connectLines writes how clients reach an injected Spark Connect server
// (docs/connect.md): the connection strings, with a Kubernetes token the
// sidecar admits, and the permission a client needs.
func (o Options) connectLines(ctx context.Context, r *report, pod *corev1.Pod, st patches.Status) {
	if st.Connect == "" {
		return
	}
	env := sidecarEnv(pod)
	listen := env[vocab.EnvConnectListen]
	if listen == "" {
		r.line("spark connect: port %d on the pod IP, which checks no identity: the sparklet that injected this pod did not put the server behind its sidecar", patches.ConnectPort)
		return
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		r.line("spark connect: the sidecar's %s %q: %v", vocab.EnvConnectListen, listen, err)
		return
	}
	access := "the policy's sidecar.connectAccess"
	if pol, err := patches.SidecarPolicy(env[vocab.EnvPolicy], pod.Namespace, o.Version); err == nil {
		a := pol.Sidecar.ConnectAccessOrDefault()
		resource := a.Resource
		if a.Group != "" {
			resource += "." + a.Group
		}
		access = a.Verb + " " + resource
	}
	r.line("spark connect: the sidecar admits clients on port %s whose Kubernetes token passes a TokenReview and whose user may %s in namespace %s",
		port, access, pod.Namespace)
	defer o.connectSessions(ctx, r, pod, env)
	if env[vocab.EnvConnectTLSDir] != "" {
		secret := connectTLSSecret(pod)
		r.line("  over TLS only, with the certificate of Secret %s; clients trust its CA (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=ca.pem for the Python client)", secret)
		r.line("  in the cluster: sc://HOST:%s/;use_ssl=true;token=$TOKEN, HOST a name the certificate holds, such as its Service's DNS name", port)
		if url := pod.Annotations[vocab.AnnotationConnectURL]; url != "" {
			r.line("  through its Service, to any of the server's pods: %s/;use_ssl=true;token=$TOKEN, if the certificate names %s", url, strings.TrimSuffix(strings.TrimPrefix(url, "sc://"), ":"+port))
		}
		routeLine(r, pod)
		r.line("  through kubectl port-forward -n %s pod/%s %s: sc://localhost:%s/;use_ssl=true;token=$TOKEN, if the certificate names localhost too", pod.Namespace, pod.Name, port, port)
		r.line("  TOKEN=$(kubectl create token SERVICEACCOUNT -n %s), a ServiceAccount allowed to connect, or your own token", pod.Namespace)
		return
	}
	if ip := pod.Status.PodIP; ip != "" {
		r.line("  in the cluster: sc://%s/;authorization=Bearer%%20$TOKEN", net.JoinHostPort(ip, port))
	}
	if url := pod.Annotations[vocab.AnnotationConnectURL]; url != "" {
		r.line("  through its Service, to any of the server's pods: %s/;authorization=Bearer%%20$TOKEN", url)
	}
	routeLine(r, pod)
	r.line("  through kubectl port-forward -n %s pod/%s %s: sc://localhost:%s/;token=$TOKEN", pod.Namespace, pod.Name, port, port)
	r.line("  TOKEN=$(kubectl create token SERVICEACCOUNT -n %s), a ServiceAccount allowed to connect, or your own token", pod.Namespace)
}

// routeLine writes the address through a Gateway of the server's
// GRPCRoute (policy connect.grpcRoute), which the Gateway serves over
// TLS whatever the sidecar speaks behind it.
func routeLine(r *report, pod *corev1.Pod) {
	if url := pod.Annotations[vocab.AnnotationConnectRouteURL]; url != "" {
		r.line("  through its GRPCRoute and the Gateway: %s/;use_ssl=true;token=$TOKEN", url)
	}
}

// connectTLSSecret is the Secret the sidecar serves Connect clients over
// TLS with.
func connectTLSSecret(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == patches.VolumeConnectTLS && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return "(none: the pod has no " + patches.VolumeConnectTLS + " volume)"
}

// sidecarEnv is the literal env of the pod's sidecar container.
func sidecarEnv(pod *corev1.Pod) map[string]string {
	env := map[string]string{}
	for _, c := range pod.Spec.InitContainers {
		if c.Name != patches.SidecarName {
			continue
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				env[e.Name] = e.Value
			}
		}
	}
	return env
}
