package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda/compileserver"
	"github.com/kcache/kcache/disk"
	"github.com/spf13/cobra"
)

// statsJSON is `kcache stats --json`. Its field names are a public
// interface (see the README).
type statsJSON struct {
	Dir      string        `json:"dir"`
	Entries  int           `json:"entries"`
	Bytes    int64         `json:"bytes"`
	MaxSize  int64         `json:"max_size"` // 0: no size limit
	Damaged  int           `json:"damaged"`  // slots failing the checks that read no binary (walkEntries)
	Devices  []groupJSON   `json:"devices"`
	Counters disk.Counters `json:"counters"`
	HitRate  float64       `json:"hit_rate"` // hits / (hits + misses), 0 to 1; see hitRate

	// StoredMaxSize is the limit kept in the cache (kcache prune
	// --max-size); 0: none, each process's KCACHE_MAX_SIZE applies.
	StoredMaxSize int64 `json:"stored_max_size"`

	// Server is the running compile server (kcache serve); null when none.
	Server *compileserver.Stats `json:"server"`
}

type groupJSON struct {
	Device   string `json:"device"`
	Compiler string `json:"compiler"`
	Entries  int    `json:"entries"`
	Bytes    int64  `json:"bytes"`
}

func newStatsCmd() *cobra.Command {
	var asJSON, exact, zero bool
	cmd := &cobra.Command{
		Use: "stats [--json] [--bytes] [--zero]",
		Example: `  kcache stats
  kcache stats --json | jq .hit_rate
  kcache stats --zero   # print, then start the counters afresh`,
		Short: "Show what the cache holds and what it saved",
		Long: `Show the number of entries, their size against the maximum, a breakdown per
device and compiler, and the counters every process using the cache adds to:
hits per tier, misses, builds, failed builds, evictions and build time saved.
--zero sets the counters back to zero.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			io := newStreams(cmd)
			io.exactBytes = exact
			return runStats(cmd.Context(), io, asJSON, zero)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&exact, "bytes", false, "print sizes in bytes")
	cmd.Flags().BoolVar(&zero, "zero", false, "set the counters to zero (after printing them)")
	return cmd
}

func runStats(ctx context.Context, io *streams, asJSON, zero bool) error {
	st, err := openExisting()
	var none noCacheError
	if errors.As(err, &none) {
		empty := emptyStats(none.cfg)
		empty.Server = serveStatus(ctx, "")
		return writeStats(io, empty, asJSON)
	}
	if err != nil {
		return err
	}
	sum, err := summarize(ctx, st)
	if err != nil {
		return fmt.Errorf("reading the cache: %w", err)
	}
	counters, err := st.Counters(ctx)
	if err != nil {
		fmt.Fprintf(io.errOut, "kcache: %v; run kcache stats --zero to start the counters afresh\n", err)
	}
	out := statsJSON{Dir: st.Dir(), Entries: sum.Entries, Bytes: sum.Bytes, MaxSize: sum.MaxSize,
		Damaged: sum.Damaged, Devices: []groupJSON{}, Counters: counters, HitRate: hitRate(counters)}
	out.StoredMaxSize, _ = st.StoredMaxSize()
	out.Server = serveStatus(ctx, "")
	for _, g := range sum.Groups {
		out.Devices = append(out.Devices, groupJSON(g))
	}
	err = writeStats(io, out, asJSON)
	if err == nil && zero {
		err = st.ZeroCounters(ctx)
	}
	return err
}

func printStats(io *streams, s statsJSON) error {
	c := s.Counters
	w := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "cache directory\t%s\n", s.Dir)
	fmt.Fprintf(w, "entries\t%d\n", s.Entries)
	if s.MaxSize > 0 {
		fmt.Fprintf(w, "size\t%s of %s (%.0f%%)\n", io.size(s.Bytes), io.size(s.MaxSize), 100*float64(s.Bytes)/float64(s.MaxSize))
		if s.StoredMaxSize > 0 {
			fmt.Fprintf(w, "limit\t%s stored in the cache (kcache prune --max-size)\n", io.size(s.StoredMaxSize))
		}
	} else {
		fmt.Fprintf(w, "size\t%s (no limit)\n", io.size(s.Bytes))
	}
	if s.Damaged > 0 {
		fmt.Fprintf(w, "damaged\t%d (run kcache verify --repair)\n", s.Damaged)
	}
	fmt.Fprintf(w, "hits\t%d (memory %d, disk %d, remote %d; %d waited for a build)\n", hits(c), c.MemoryHits, c.DiskHits, c.RemoteHits, c.Waited)
	fmt.Fprintf(w, "misses\t%d\n", c.Misses)
	if hits(c)+c.Misses > 0 {
		fmt.Fprintf(w, "hit rate\t%.1f%%\n", 100*s.HitRate)
	}
	fmt.Fprintf(w, "builds\t%d\n", c.Builds)
	fmt.Fprintf(w, "failed builds\t%d\n", c.FailedBuilds)
	fmt.Fprintf(w, "build time\t%s\n", duration(c.BuildTime))
	fmt.Fprintf(w, "build time saved\t%s\n", duration(c.SavedTime))
	fmt.Fprintf(w, "evictions\t%d (%s)\n", c.Evictions, io.size(c.EvictedBytes))
	if c.DiskErrors > 0 {
		fmt.Fprintf(w, "disk errors\t%d\n", c.DiskErrors)
	}
	if c.DiskDropped > 0 {
		fmt.Fprintf(w, "not stored\t%d (the cache at its ceiling while eviction ran)\n", c.DiskDropped)
	}
	if r := c.RemoteHits + c.RemoteMisses + c.RemoteErrors + c.RemoteRejected; r > 0 {
		fmt.Fprintf(w, "remote\t%d hits (%d waited for another machine's build), %d misses, %d errors (%d timeouts), %d rejected\n",
			c.RemoteHits, c.RemoteWaited, c.RemoteMisses, c.RemoteErrors, c.RemoteTimeouts, c.RemoteRejected)
	}
	if c.RemoteDropped+c.RemoteExisted > 0 {
		fmt.Fprintf(w, "remote writes\t%d dropped (queue full, or server skipped), %d found a value already stored\n",
			c.RemoteDropped, c.RemoteExisted)
	}
	if s.Server != nil {
		printServe(w, s.Server)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(s.Devices) == 0 {
		return nil
	}
	fmt.Fprintln(io.out)
	rows := [][]string{{"DEVICE", "COMPILER", "ENTRIES", "SIZE"}}
	for _, g := range s.Devices {
		rows = append(rows, []string{g.Device, cell(g.Compiler, io.tty), itoa(g.Entries), io.size(g.Bytes)})
	}
	if io.tty {
		fitTable(rows, []int{0, 1}, io.width)
	}
	return writeTable(io.out, rows)
}

// hits counts the lookups a tier answered: the same sum in both outputs.
func hits(c disk.Counters) int64 { return c.MemoryHits + c.DiskHits + c.RemoteHits }

// hitRate is the share of lookups a tier answered, hits / (hits + misses),
// where a miss is a lookup that ran the compiler; 0 before any lookup.
func hitRate(c disk.Counters) float64 {
	if n := hits(c) + c.Misses; n > 0 {
		return float64(hits(c)) / float64(n)
	}
	return 0
}

// writeStats prints s as JSON or as a table.
func writeStats(io *streams, s statsJSON, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(io.out).Encode(s)
	}
	return printStats(io, s)
}

// emptyStats is what stats shows for a cache directory that does not
// exist yet: no entries, no counts, the limit that will apply.
func emptyStats(cfg kcache.Config) statsJSON {
	s := statsJSON{Dir: cfg.Dir, Devices: []groupJSON{}}
	if !cfg.EvictionDisabled {
		s.MaxSize = cfg.MaxSize
	}
	return s
}
