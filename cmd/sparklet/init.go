package main

import "errors"

func runInit(args []string) error {
	return errors.New("not yet implemented")
}
