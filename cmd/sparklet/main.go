package main

import (
	"os"
)

func main() {
	os.Exit(execute(&app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}
