package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kcache/kcache/disk"
	"github.com/spf13/cobra"
)

// whyJSON is `kcache why --json`. Its field names are a public interface
// (see the README).
type whyJSON struct {
	File    string     `json:"file"`
	ID      string     `json:"id"`      // the key FILE has now
	Outcome string     `json:"outcome"` // "hit" or "miss"
	Entry   *entryJSON `json:"entry"`   // the entry, on a hit
	Nearest []nearJSON `json:"nearest"` // on a miss: entries of the same source or image
}

// nearJSON is an entry close to a key and what differs.
type nearJSON struct {
	ID      string        `json:"id"`
	Damaged string        `json:"damaged,omitempty"` // why the entry is unusable, if it is
	Changes []disk.Change `json:"changes"`
}

// maxNearest is how many near entries why shows: the closest few explain
// a miss; more is noise.
const maxNearest = 3

func newWhyCmd() *cobra.Command {
	var (
		includes []string
		depends  []string
		options  string
		device   int
		asJSON   bool
		backend  string
		special  string
	)
	cmd := &cobra.Command{
		Use: "why [-I DIR]... [--depends FILE]... [--options \"...\"] [--device N] [--specialize LIST] [--backend opencl|cuda] [--json] FILE",
		Example: `  # did this kernel hit, and if not, what changed?
  kcache why -I include --options "-DTILE=16" kernels/gemm.cl`,
		Short: "Explain whether FILE's build would come from the cache, and why not",
		Long: `Compute the key FILE would have now, with the same flags as kcache build, and
explain the outcome: a hit, or the nearest entries (built from the same source
or the same source and headers) and what differs: device, compiler, options,
a header, a specialization constant or an environment variable. This is the
answer to "why did my kernel recompile?".`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			// --specialize is accepted so that a build's command line can
			// be repeated here: it does not enter the key.
			if err := checkSpecializations(special); err != nil {
				return usageError{err}
			}
			if err := checkBackend(backend); err != nil {
				return usageError{err}
			}
			if backend == "cuda" {
				return usagef("why explains OpenCL builds only; --backend cuda is not supported here yet")
			}
			in := buildInput{options: strings.TrimSpace(options + includeOptions(includes)), depends: depends}
			return runWhy(cmd.Context(), newStreams(cmd), a[0], in, device, asJSON)
		},
	}
	cmd.Flags().StringArrayVarP(&includes, "include", "I", nil, "add `DIR` to the header search path (repeatable)")
	cmd.Flags().StringArrayVar(&depends, "depends", nil, "declare `FILE` (or every file under a directory) a dependency, as given to kcache build")
	cmd.Flags().StringVar(&backend, "backend", "opencl", "`opencl`, as given to kcache build")
	cmd.Flags().StringVar(&special, "specialize", "", "accepted as given to kcache build (`LIST`); it does not enter the key")
	cmd.Flags().StringVar(&options, "options", "", "OpenCL build `OPTIONS`, as given to kcache build")
	cmd.Flags().IntVar(&device, "device", 0, "index `N` of the OpenCL device, in platform order")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func runWhy(ctx context.Context, io *streams, file string, in buildInput, device int, asJSON bool) error {
	code, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w; give the path of an OpenCL C file", err)
	}
	st, err := openExisting()
	if err != nil && !errors.As(err, new(noCacheError)) {
		return err
	}
	sess, err := keySession(device)
	if err != nil {
		return err
	}
	defer sess.Close()
	key, err := sess.cache.Key(sess.dev, fileSource(file, code, in))
	if err != nil {
		return fmt.Errorf("computing the key of %s: %w; check its #include lines and -I directories", file, err)
	}
	var (
		hit  *disk.Info
		near []disk.Near
	)
	if st != nil { // else there is no cache yet: a miss with nothing near
		if hit, near, err = st.Explain(ctx, key, maxNearest); err != nil {
			return fmt.Errorf("reading the cache: %w", err)
		}
	}
	w := whyJSON{File: file, ID: key.Digest().String(), Outcome: "miss", Nearest: []nearJSON{}}
	if hit != nil {
		w.Outcome = "hit"
		e := newEntryJSON(hit)
		w.Entry = &e
	}
	for _, n := range near {
		w.Nearest = append(w.Nearest, newNearJSON(&n))
	}
	if asJSON {
		return json.NewEncoder(io.out).Encode(w)
	}
	return printWhy(io, &w)
}

func newNearJSON(n *disk.Near) nearJSON {
	j := nearJSON{ID: n.Info.ID(), Changes: n.Changes}
	if j.Changes == nil {
		j.Changes = []disk.Change{}
	}
	if n.Info.Err != nil {
		j.Damaged = n.Info.Err.Error()
	}
	return j
}

func printWhy(io *streams, w *whyJSON) error {
	if w.Entry != nil {
		_, err := fmt.Fprintf(io.out, "%s: hit: entry %s, built in %s, last used %s ago\n", w.File, io.id(w.ID),
			duration(time.Duration(w.Entry.BuildMS*float64(time.Millisecond))), usedAge(time.Now(), w.Entry.Used))
		return err
	}
	fmt.Fprintf(io.out, "%s: miss: no entry has key %s\n", w.File, io.id(w.ID))
	if len(w.Nearest) == 0 {
		_, err := fmt.Fprintln(io.out, "no entry was built from this source: it is new or was edited, or its entries were evicted")
		return err
	}
	fmt.Fprintln(io.out, "nearest entries:")
	printNear(io, w.Nearest)
	return nil
}

func printNear(io *streams, near []nearJSON) {
	for _, n := range near {
		fmt.Fprintf(io.out, "  %s  %s\n", io.id(n.ID), plural(len(n.Changes), "difference"))
		if n.Damaged != "" {
			fmt.Fprintf(io.out, "    the entry is damaged (%s); run kcache verify --repair\n", n.Damaged)
		}
		for _, c := range n.Changes {
			fmt.Fprintf(io.out, "    %s\n", c)
		}
	}
}
