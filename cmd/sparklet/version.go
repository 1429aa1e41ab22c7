package main

import (
	"fmt"

	"github.com/sparklet/sparklet/internal/version"
)

func runVersion(args []string) error {
	fmt.Println(version.Version)
	return nil
}
