package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcache/kcache/disk"
	"github.com/spf13/cobra"
)

// lsOptions are the filters and order of `kcache ls`.
type lsOptions struct {
	device     string
	olderThan  time.Duration
	largerThan int64
	sort       string
	json       bool
}

// lsSorts orders entries for --sort: the most recently used, the largest,
// the slowest to build first.
var lsSorts = map[string]func(a, b *disk.Info) int{
	"used":  func(a, b *disk.Info) int { return b.AccessTime.Compare(a.AccessTime) },
	"size":  func(a, b *disk.Info) int { return cmp.Compare(b.Size, a.Size) },
	"built": func(a, b *disk.Info) int { return cmp.Compare(b.BuildTime, a.BuildTime) },
}

func newLsCmd() *cobra.Command {
	var o lsOptions
	var exact bool
	cmd := &cobra.Command{
		Use: "ls [--device D] [--older-than AGE] [--larger-than SIZE] [--sort used|size|built] [--json] [--bytes]",
		Example: `  kcache ls --sort size | head
  kcache ls --older-than 30d --device gfx90a
  kcache ls --json | jq -r '.[] | select(.build_ms > 1000) | .id'`,
		Short: "List the cache's entries",
		Long: `List the cache's entries: ID (the start of the key digest; any unique prefix
names the entry), size, build time, last use, device, build options and kernels.
--sort used lists the most recently used first, size the largest, built the
slowest to build. On a terminal the table has a header and short IDs; piped,
it is tab-separated with full IDs. Last use is recorded to within an hour:
USED shows "<1h" for anything more recent, and --older-than takes 1h or more.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lsSorts[o.sort] == nil {
				return usagef("--sort %q: want used, size or built", o.sort)
			}
			io := newStreams(cmd)
			io.exactBytes = exact
			return runLs(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.device, "device", "", "only entries for devices whose name contains `D`")
	f.Var(useAgeValue{ageValue{&o.olderThan}}, "older-than", "only entries unused for longer than `AGE` (7d, 36h; 1h or more)")
	f.Var(sizeValue{&o.largerThan}, "larger-than", "only entries larger than `SIZE` (512KiB, 2M)")
	f.StringVar(&o.sort, "sort", "used", "order by `KEY`: used, size or built")
	f.BoolVar(&o.json, "json", false, "print a JSON array of entries")
	f.BoolVar(&exact, "bytes", false, "print sizes in bytes")
	cmd.RegisterFlagCompletionFunc("sort", cobra.FixedCompletions([]string{"used", "size", "built"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runLs(ctx context.Context, io *streams, o lsOptions) error {
	st, err := openExisting()
	if errors.As(err, new(noCacheError)) {
		if o.json {
			return writeEntriesJSON(io.out, nil)
		}
		return printLs(io, nil, time.Now())
	}
	if err != nil {
		return err
	}
	now := time.Now()
	var entries []*disk.Info
	damaged, err := walkEntries(ctx, st, func(in *disk.Info) {
		if o.keeps(in, now) {
			entries = append(entries, in)
		}
	})
	if err != nil {
		return fmt.Errorf("reading the cache: %w", err)
	}
	// The walk's order is random: the ID breaks ties, so the output is
	// the same from one run to the next.
	slices.SortFunc(entries, func(a, b *disk.Info) int {
		return cmp.Or(lsSorts[o.sort](a, b), cmp.Compare(a.Dir, b.Dir), cmp.Compare(a.Slot, b.Slot))
	})
	if damaged > 0 {
		fmt.Fprintf(io.errOut, "kcache: %s not listed; run kcache verify --repair\n", plural(damaged, "damaged entry"))
	}
	if o.json {
		return writeEntriesJSON(io.out, entries)
	}
	return printLs(io, entries, now)
}

// keeps reports whether the entry passes the filters.
func (o *lsOptions) keeps(in *disk.Info, now time.Time) bool {
	switch {
	case o.device != "" && !strings.Contains(strings.ToLower(disk.DeviceLabel(in.Key)), strings.ToLower(o.device)):
		return false
	case o.olderThan > 0 && now.Sub(in.AccessTime) <= o.olderThan:
		return false
	case o.largerThan > 0 && in.Size <= o.largerThan:
		return false
	}
	return true
}

func printLs(io *streams, entries []*disk.Info, now time.Time) error {
	out := bufio.NewWriterSize(io.out, 64<<10) // not a system call a line
	row := func(in *disk.Info) []string {
		return []string{io.id(in.ID()), io.size(in.Size), duration(in.BuildTime), usedAge(now, in.AccessTime),
			in.Key.Device.Name, optionsCell(in.Key.Options.Compile, io.tty), kernelsLabel(kernelNames(in.Key.Image.Source))}
	}
	if !io.tty {
		// Piped: plain tab-separated fields, for cut and awk.
		for _, in := range entries {
			if _, err := out.WriteString(strings.Join(row(in), "\t") + "\n"); err != nil {
				return err
			}
		}
		return out.Flush()
	}
	rows := [][]string{{"ID", "SIZE", "BUILD", "USED", "DEVICE", "OPTIONS", "KERNELS"}}
	for _, in := range entries {
		rows = append(rows, row(in))
	}
	fitTable(rows, []int{4, 5, 6}, io.width)
	if err := writeTable(out, rows); err != nil {
		return err
	}
	return out.Flush()
}

// optionsCell shows build options in a table: "-" for none.
func optionsCell(opts string, tty bool) string {
	if strings.TrimSpace(opts) == "" {
		return "-"
	}
	return cell(opts, tty)
}

// maxCell is the widest a table cell gets on a terminal.
const maxCell = 40

// cell fits s into a table cell: runs of spaces become one, and on a
// terminal it is cut to maxCell characters.
func cell(s string, tty bool) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); tty && len(r) > maxCell {
		return string(r[:maxCell-1]) + "…"
	}
	return s
}

// writeEntriesJSON writes entries as one JSON array, the bytes
// json.Encoder would write for it. Encoding is most of the cost after the
// walk (10^5 entries take tenths of a second), so the entries are encoded
// on every processor and joined in order.
func writeEntriesJSON(w io.Writer, entries []*disk.Info) error {
	parts := make([][]byte, len(entries))
	errs := make([]error, len(entries))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(entries)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(entries)); i = next.Add(1) - 1 {
				parts[i], errs[i] = json.Marshal(newEntryJSON(entries[i]))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	out := bufio.NewWriterSize(w, 64<<10)
	out.WriteByte('[')
	for i, p := range parts {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(p)
	}
	out.WriteString("]\n")
	return out.Flush()
}
