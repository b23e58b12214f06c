package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// clearJSON is `kcache clear --json`. Its field names are a public
// interface (see the README).
type clearJSON struct {
	Freed int64 `json:"freed"` // bytes the entries held
}

func newClearCmd() *cobra.Command {
	var asJSON, exact bool
	cmd := &cobra.Command{
		Use:     "clear [--json] [--bytes]",
		Example: `  kcache clear`,
		Short:   "Remove every entry",
		Long: `Remove every entry of the cache, of every format version. Other processes
see an empty cache at once. The counters are kept (kcache stats --zero resets them).`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			io := newStreams(cmd)
			io.exactBytes = exact
			return runClear(cmd.Context(), io, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&exact, "bytes", false, "print sizes in bytes")
	return cmd
}

func runClear(ctx context.Context, io *streams, asJSON bool) error {
	st, err := openStore()
	if err != nil {
		return err
	}
	size, _ := st.Size(ctx) // for the report only
	if err := st.Clear(ctx); err != nil {
		return fmt.Errorf("%w; check the permissions of %s", err, st.Dir())
	}
	if asJSON {
		return json.NewEncoder(io.out).Encode(clearJSON{Freed: size})
	}
	_, err = fmt.Fprintf(io.errOut, "cleared %s (%s)\n", st.Dir(), io.size(size))
	return err
}
