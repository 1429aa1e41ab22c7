package main

import "errors"

func runInject(args []string) error {
	return errors.New("not yet implemented")
}
