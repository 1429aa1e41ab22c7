package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparklet/sparklet/internal/version"
)

func newVersionCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Go version it was built with",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			info := version.Get()
			switch output {
			case "":
				_, err := fmt.Fprint(a.stdout, info.String())
				return err
			case "json":
				b, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(a.stdout, "%s\n", b)
				return err
			}
			return usageError{fmt.Errorf("--output must be json or empty, got %q", output)}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json for a JSON object")
	return cmd
}
