package ready

import (
	"context"
	"crypto/tls"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// client gives each probe a second and keeps no connections to servers
// that tests stop. It does not check HTTPS certificates: a probe asks only
// whether the server is up.
var client = &http.Client{Timeout: time.Second, Transport: &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness only
	DisableKeepAlives: true,
}}

// OK reports whether url answers 200 OK.
func OK(url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Wait polls url every interval until it answers 200 OK or timeout passes.
// exited, when set, runs before each poll: its error ends the wait, as a
// server whose process has exited will never be ready.
func Wait(ctx context.Context, url string, interval, timeout time.Duration, exited func() error) error {
	return wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		if exited != nil {
			if err := exited(); err != nil {
				return false, err
			}
		}
		return OK(url), nil
	})
}
