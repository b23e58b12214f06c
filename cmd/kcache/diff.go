package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kcache/kcache/disk"
	"github.com/spf13/cobra"
)

// diffJSON is `kcache diff --json`. Its field names are a public interface
// (see the README).
type diffJSON struct {
	A       string        `json:"a"`
	B       string        `json:"b"`
	Changes []disk.Change `json:"changes"` // old is A's value, new is B's
}

func newDiffCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "diff [--json] ID1 ID2",
		Example: `  kcache diff 3f2a9c 7b01de`,
		Short:   "Show what differs between the keys of two entries",
		Long: `Show, component by component, what differs between the keys of two entries:
device, compiler, source, headers, specialization constants, build options and
environment. IDs are unique prefixes of the IDs kcache ls prints.`,
		Args:              args(cobra.ExactArgs(2)),
		ValidArgsFunction: completeIDs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runDiff(cmd.Context(), newStreams(cmd), a[0], a[1], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func runDiff(ctx context.Context, io *streams, id1, id2 string, asJSON bool) error {
	st, err := openExisting()
	if err != nil {
		return err
	}
	a, err := findEntry(ctx, st, id1)
	if err != nil {
		return err
	}
	b, err := findEntry(ctx, st, id2)
	if err != nil {
		return err
	}
	d := diffJSON{A: a.ID(), B: b.ID(), Changes: disk.CompareKeys(a.Key, b.Key)}
	if d.Changes == nil {
		d.Changes = []disk.Change{}
	}
	if asJSON {
		return json.NewEncoder(io.out).Encode(d)
	}
	fmt.Fprintf(io.out, "%s -> %s: %s\n", io.id(d.A), io.id(d.B), plural(len(d.Changes), "difference"))
	for _, c := range d.Changes {
		fmt.Fprintf(io.out, "  %s\n", c)
	}
	return nil
}
