package main

import "errors"

func runSidecar(args []string) error {
	return errors.New("not yet implemented")
}
