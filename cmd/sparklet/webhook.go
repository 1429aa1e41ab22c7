package main

import "errors"

func runWebhook(args []string) error {
	return errors.New("not yet implemented")
}
