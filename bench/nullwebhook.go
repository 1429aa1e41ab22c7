package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// The null webhook is the floor the webhook is measured against: an HTTPS
// server with the webhook's certificate that decodes the AdmissionReview,
// as the webhook does, and allows the pod with no patch. It runs as a
// process of its own, as `sparklet webhook` does, so that the two share
// the machine the same way: `bench null-webhook --listen ADDR
// --tls-cert-file F --tls-key-file F`.
//
// With --typed it is instead a mutating webhook written the usual way
// that changes nothing: controller-runtime's defaulting webhook
// (pkg/webhook/admission/defaulter_custom.go, v0.22) decodes the pod into
// its Go type, calls the defaulter, encodes the pod again and answers the
// JSON patch from the request's object to that encoding
// (PatchResponseFromRaw: jsonpatch.CreatePatch). It is what any webhook
// that mutates a typed Pod pays before it mutates anything.
const nullWebhookCommand = "null-webhook"

// nullWebhookMain serves until it is killed.
func nullWebhookMain(args []string) error {
	fs := flag.NewFlagSet(nullWebhookCommand, flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	certFile := fs.String("tls-cert-file", "", "serving certificate")
	keyFile := fs.String("tls-key-file", "", "serving key")
	typed := fs.Bool("typed", false, "decode the pod, encode it again and answer the patch between the two, as a defaulting webhook that changes nothing does")
	answer := fs.String("answer", "", "answer every request with the JSON patch in this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *certFile == "" || *keyFile == "" {
		return errors.New("--tls-cert-file and --tls-key-file are both required")
	}
	if *typed && *answer != "" {
		return errors.New("--typed and --answer exclude each other: pick one kind of webhook")
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert-file, --tls-key-file: %w", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", *listen, err)
	}
	handler := review(allowAll)
	switch {
	case *typed:
		handler = review(typedNoOp)
	case *answer != "":
		patch, err := os.ReadFile(*answer)
		if err != nil {
			return fmt.Errorf("--answer: %w", err)
		}
		if !json.Valid(patch) {
			return fmt.Errorf("--answer %s: not JSON", *answer)
		}
		handler = answerWith(patch)
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
	}
	return srv.ServeTLS(ln, "", "")
}

// review answers one AdmissionReview with what respond makes of its
// request.
func review(respond func(*admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in, ok := readReview(w, r)
		if !ok {
			return
		}
		resp, err := respond(in.Request)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}
}

// readReview reads and decodes the AdmissionReview of r; when it cannot,
// it answers the error and ok is false.
func readReview(w http.ResponseWriter, r *http.Request) (in admissionv1.AdmissionReview, ok bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 7<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return in, false
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
		http.Error(w, fmt.Sprintf("decode AdmissionReview: %v", err), http.StatusBadRequest)
		return in, false
	}
	return in, true
}

// allowAll allows the request.
func allowAll(req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}, nil
}

// answerWith decodes each AdmissionReview as review does and allows it
// with patch, encoded beforehand: the answer costs only its bytes.
func answerWith(patch []byte) http.HandlerFunc {
	tail := []byte(`,"allowed":true,"patch":"` + base64.StdEncoding.EncodeToString(patch) + `","patchType":"JSONPatch"}}`)
	return func(w http.ResponseWriter, r *http.Request) {
		in, ok := readReview(w, r)
		if !ok {
			return
		}
		kind, _ := json.Marshal(in.Kind)
		apiVersion, _ := json.Marshal(in.APIVersion)
		uid, _ := json.Marshal(string(in.Request.UID))
		out := make([]byte, 0, 64+len(kind)+len(apiVersion)+len(uid)+len(tail))
		out = append(append(append(out, `{"kind":`...), kind...), `,"apiVersion":`...)
		out = append(append(append(out, apiVersion...), `,"response":{"uid":`...), uid...)
		out = append(out, tail...)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out))) // as sparklet's webhook does
		_, _ = w.Write(out)
	}
}

// typedNoOp decodes the pod, encodes it again and answers the JSON patch
// between the two encodings.
func typedNoOp(req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	encoded, err := json.Marshal(&pod)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.CreatePatch(req.Object.Raw, encoded)
	if err != nil {
		return nil, err
	}
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if len(ops) > 0 {
		patch, err := json.Marshal(ops)
		if err != nil {
			return nil, err
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	return resp, nil
}

// startNullWebhook runs this program's null webhook, with flags such as
// --typed, on a free loopback port with the given certificate and waits
// until it answers. pid is its process's; stop kills it.
func startNullWebhook(ctx context.Context, client *http.Client, certFile, keyFile, logFile string, flags ...string) (base string, pid int, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	log, err := os.Create(logFile)
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(self, append([]string{nullWebhookCommand, "--listen", addr, "--tls-cert-file", certFile, "--tls-key-file", keyFile}, flags...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return "", 0, nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	base = "https://" + addr
	review, err := admissionReview(benchPods[0].file)
	if err != nil {
		stop()
		return "", 0, nil, err
	}
	deadline, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := admit(deadline, client, base+"/", review, false)
		if err == nil {
			return base, cmd.Process.Pid, stop, nil
		}
		select {
		case <-exited:
			return "", 0, nil, fmt.Errorf("null webhook exited; log %s", logFile)
		case <-deadline.Done():
			stop()
			return "", 0, nil, fmt.Errorf("null webhook not ready: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
