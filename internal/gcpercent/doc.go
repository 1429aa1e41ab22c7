// Package gcpercent sets a component's GOGC unless the GOGC env var does.
package gcpercent
