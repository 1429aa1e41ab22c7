// Package verify checks injected pods from outside, as tests and the demo do.
package verify
