package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/kcache/kcache/disk"

	"github.com/spf13/cobra"
)

// verifyJSON is `kcache verify --json`. Its field names are a public
// interface (see the README).
type verifyJSON struct {
	Checked    int           `json:"checked"`    // entries and leftovers examined
	OK         int           `json:"ok"`         // sound entries
	Corrupt    int           `json:"corrupt"`    // damaged entries and leftovers of interrupted writes
	Incomplete int           `json:"incomplete"` // of corrupt: leftovers of interrupted writes
	Repaired   int           `json:"repaired"`   // of corrupt: removed, with --repair
	Bytes      int64         `json:"bytes"`      // size of the sound entries
	Problems   []problemJSON `json:"problems"`
}

type problemJSON struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

func newVerifyCmd() *cobra.Command {
	var asJSON, repair, exact bool
	cmd := &cobra.Command{
		Use: "verify [--repair] [--json] [--bytes]",
		Example: `  kcache verify
  kcache verify --repair   # remove what is damaged`,
		Short: "Check every entry's record and checksums",
		Long: `Read every entry and check that its record decodes and sits where its key
places it, and that its binary has the recorded size, SHA-256 and CRC-32C.
With --repair, remove damaged entries and leftovers of interrupted writes.
The exit status is 1 if damage was found and not repaired.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			io := newStreams(cmd)
			io.exactBytes = exact
			return runVerify(cmd.Context(), io, repair, asJSON)
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "remove damaged entries and leftovers")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&exact, "bytes", false, "print sizes in bytes")
	return cmd
}

func runVerify(ctx context.Context, io *streams, repair, asJSON bool) error {
	var r disk.Report
	st, err := openExisting()
	switch {
	case errors.As(err, new(noCacheError)):
		// Nothing to check: an empty report.
	case err != nil:
		return err
	default:
		if r, err = st.Verify(ctx, repair); err != nil {
			return fmt.Errorf("verifying the cache: %w", err)
		}
		if err := leaveOutInternal(ctx, st, &r); err != nil {
			return fmt.Errorf("verifying the cache: %w", err)
		}
	}
	v := verifyJSON{
		Checked: r.Entries + r.Damaged + r.Incomplete, OK: r.Entries, Corrupt: r.Damaged + r.Incomplete,
		Incomplete: r.Incomplete, Repaired: r.Removed, Bytes: r.Bytes, Problems: []problemJSON{},
	}
	for _, p := range r.Problems {
		v.Problems = append(v.Problems, problemJSON{Path: p.Path, Error: p.Err.Error()})
	}
	if asJSON {
		err = json.NewEncoder(io.out).Encode(v)
	} else {
		err = printVerify(io, &v, repair)
	}
	if err == nil && v.Corrupt > v.Repaired {
		return exitError{exitFailure}
	}
	return err
}

func printVerify(io *streams, v *verifyJSON, repair bool) error {
	for _, p := range v.Problems {
		fmt.Fprintf(io.out, "corrupt  %s: %s\n", p.Path, p.Error)
	}
	fmt.Fprintf(io.out, "checked %d, ok %d (%s), corrupt %d, repaired %d\n", v.Checked, v.OK, io.size(v.Bytes), v.Corrupt, v.Repaired)
	if v.Corrupt > v.Repaired && !repair {
		fmt.Fprintln(io.errOut, "kcache: damaged entries found; run kcache verify --repair to remove them")
	}
	return nil
}

// leaveOutInternal takes the cache's bookkeeping entries (see internal)
// out of r's sound entries, so that verify's "ok" counts what stats and
// ls count as entries. Damage is counted whatever the slot held.
func leaveOutInternal(ctx context.Context, st *disk.Store, r *disk.Report) error {
	var mu sync.Mutex // protects r
	return st.WalkParallel(ctx, func(in disk.Info) error {
		if in.Err == nil && internal(&in) {
			mu.Lock()
			r.Entries--
			r.Bytes -= in.Size
			mu.Unlock()
		}
		return nil
	})
}
