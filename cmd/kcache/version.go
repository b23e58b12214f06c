package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// newVersionCmd is `kcache version`, the same as `kcache --version`.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Example: `  kcache version`,
		Short:   "Show kcache's version",
		Args:    args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kcache %s\n", version())
			return err
		},
	}
}

// version describes this build as `kcache --version` prints it: the
// module version when installed with go install at a version, else the
// commit it was built from (with "+dirty" for uncommitted changes) and
// when, as the Go toolchain stamps them, and the Go version.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown) " + runtime.Version()
	}
	v := info.Main.Version
	var rev, at string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if v == "" || v == "(devel)" {
		v = "(devel)"
		if rev != "" {
			v = rev[:min(12, len(rev))]
			if dirty {
				v += "+dirty"
			}
			if at != "" {
				v += " " + at
			}
		}
	}
	return v + " " + info.GoVersion
}
