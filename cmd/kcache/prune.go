package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kcache/kcache/disk"
	"github.com/spf13/cobra"
)

// pruneJSON is `kcache prune --json`. Its field names are a public
// interface (see the README).
type pruneJSON struct {
	DryRun  bool     `json:"dry_run"`
	Removed int      `json:"removed"` // entries removed (or that would be)
	Freed   int64    `json:"freed"`   // bytes they held
	Entries int      `json:"entries"` // entries left
	Bytes   int64    `json:"bytes"`   // bytes left
	IDs     []string `json:"ids"`     // the entries removed
}

func newPruneCmd() *cobra.Command {
	var (
		o             disk.PruneOptions
		asJSON, exact bool
	)
	cmd := &cobra.Command{
		Use: "prune [--max-size SIZE] [--older-than AGE] [--dry-run] [--json] [--bytes]",
		Example: `  kcache prune --older-than 30d
  kcache prune --max-size 2GiB --dry-run
  kcache prune   # apply KCACHE_MAX_SIZE and KCACHE_THRESHOLD now`,
		Short: "Remove least recently used entries",
		Long: `Remove entries unused for longer than --older-than, then the least recently
used ones until the cache fits in --max-size. --max-size also stores SIZE in the
cache as its own limit, which a process's smaller KCACHE_MAX_SIZE no longer
lowers (--max-size 0 removes it). With neither flag, apply the configured
limits (the cache's stored limit or KCACHE_MAX_SIZE, whichever is larger, and
KCACHE_THRESHOLD). --dry-run lists what would go and removes nothing.

Last use is recorded to within an hour (a hit rewrites nothing unless the
entry's time is an hour old): --older-than takes 1h or more, and entries used
within the same hour are removed by --max-size in no particular order.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			io := newStreams(cmd)
			io.exactBytes = exact
			configured := !cmd.Flags().Changed("max-size") && !cmd.Flags().Changed("older-than")
			if configured {
				cfg, err := configFromEnv()
				if err != nil {
					return err
				}
				o.OlderThan = cfg.AgeThreshold
			}
			return runPrune(cmd.Context(), io, o, asJSON, configured, cmd.Flags().Changed("max-size"))
		},
	}
	f := cmd.Flags()
	f.Var(sizeValue{&o.MaxSize}, "max-size", "remove least recently used entries until the cache fits in `SIZE`")
	f.Var(useAgeValue{ageValue{&o.OlderThan}}, "older-than", "remove entries unused for longer than `AGE` (7d, 36h; 1h or more)")
	f.BoolVar(&o.DryRun, "dry-run", false, "list what would be removed; remove nothing")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&exact, "bytes", false, "print sizes in bytes")
	return cmd
}

// runPrune prunes as o says. configured takes the size from the store's
// limit; store keeps o.MaxSize as the cache's limit.
func runPrune(ctx context.Context, io *streams, o disk.PruneOptions, asJSON, configured, store bool) error {
	st, err := openStore()
	if err != nil {
		return err
	}
	if configured {
		o.MaxSize = st.MaxSize()
	}
	if store && !o.DryRun {
		if err := st.SetMaxSize(ctx, o.MaxSize); err != nil {
			return err
		}
	}
	r, err := st.Prune(ctx, o)
	if err != nil {
		return fmt.Errorf("pruning the cache: %w; run kcache verify", err)
	}
	p := pruneJSON{DryRun: r.DryRun, Removed: r.Removed, Freed: r.Freed, Entries: r.Entries, Bytes: r.Bytes, IDs: []string{}}
	for _, in := range r.RemovedEntries {
		p.IDs = append(p.IDs, in.ID())
	}
	if asJSON {
		return json.NewEncoder(io.out).Encode(p)
	}
	now := time.Now()
	verb := "removed"
	if o.DryRun {
		verb = "would remove"
	}
	for _, in := range r.RemovedEntries {
		fmt.Fprintf(io.out, "%s  %s\t%s\tused %s ago\n", verb, io.id(in.ID()), io.size(in.Size), usedAge(now, in.AccessTime))
	}
	fmt.Fprintf(io.errOut, "%s %s (%s); %s (%s) remain\n", verb, plural(r.Removed, "entry"), io.size(r.Freed), plural(r.Entries, "entry"), io.size(r.Bytes))
	if r.Damaged > 0 {
		fmt.Fprintf(io.errOut, "kcache: %s left alone; run kcache verify --repair\n", plural(r.Damaged, "damaged entry"))
	}
	return nil
}
