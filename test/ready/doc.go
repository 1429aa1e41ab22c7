// Package ready waits for a server's readiness endpoint to answer 200 OK.
// The endpoints are /readyz, /health and the like, over HTTP or HTTPS.
package ready
