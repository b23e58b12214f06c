package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kcache/kcache/disk"
	"github.com/spf13/cobra"
)

// exportJSON is `kcache export --json`. Its field names are a public
// interface (see the README).
type exportJSON struct {
	File    string `json:"file"`
	Entries int    `json:"entries"` // entries written
	Bytes   int64  `json:"bytes"`   // their size before compression
	Skipped int    `json:"skipped"` // entries left out because they failed their checks
}

func newExportCmd() *cobra.Command {
	var (
		device    string
		olderThan time.Duration
		asJSON    bool
		exact     bool
	)
	cmd := &cobra.Command{
		Use: "export [--device D] [--older-than AGE] [--json] [--bytes] FILE",
		Example: `  kcache export cache.tar.zst
  kcache export --device "NVIDIA A100" a100.tar.zst
  kcache export - | ssh build-2 kcache import -`,
		Short: "Write entries to a portable bundle (tar + zstd)",
		Long: `Write the cache's entries to FILE, a tar archive compressed with zstd, to
pre-warm other machines and container images with kcache import. Every binary
is checked against its SHA-256 on the way out. --device keeps entries for
devices whose name contains D; --older-than keeps entries unused for longer
than AGE. FILE - writes the bundle to standard output (the report then goes
to standard error).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			ios := newStreams(cmd)
			ios.exactBytes = exact
			o := lsOptions{device: device, olderThan: olderThan}
			return runExport(cmd.Context(), ios, a[0], &o, asJSON)
		},
	}
	cmd.Flags().StringVar(&device, "device", "", "only entries for devices whose name contains `D`")
	cmd.Flags().Var(useAgeValue{ageValue{&olderThan}}, "older-than", "only entries unused for longer than `AGE` (1h or more)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&exact, "bytes", false, "print sizes in bytes")
	return cmd
}

func runExport(ctx context.Context, ios *streams, file string, o *lsOptions, asJSON bool) error {
	if file == "-" && ios.tty {
		// As zstd and gzip do: compressed bytes on a screen help no one.
		return errors.New("refusing to write a compressed bundle to a terminal; redirect standard output (kcache export - > cache.tar.zst) or give a FILE")
	}
	st, err := openExisting()
	if err != nil {
		return err
	}
	report := ios.out
	if file == "-" {
		report = ios.errOut
	}
	now := time.Now()
	rep, err := writeAtomically(file, ios.out, func(w io.Writer) (disk.ExportReport, error) {
		// The cache's own bookkeeping stays: a dependency record names
		// files by inode and device, which mean nothing elsewhere.
		return st.ExportBundle(ctx, w, func(in *disk.Info) bool { return !internal(in) && o.keeps(in, now) })
	})
	if err != nil {
		return err
	}
	e := exportJSON{File: file, Entries: rep.Entries, Bytes: rep.Bytes, Skipped: rep.Skipped}
	if asJSON {
		return json.NewEncoder(report).Encode(e)
	}
	fmt.Fprintf(ios.errOut, "exported %s (%s) to %s\n", plural(e.Entries, "entry"), ios.size(e.Bytes), file)
	if e.Skipped > 0 {
		fmt.Fprintf(ios.errOut, "kcache: %s left out; run kcache verify --repair\n", plural(e.Skipped, "damaged entry"))
	}
	return nil
}

// writeAtomically runs write on file ("-": stdout), through a temporary
// file renamed into place on success, so that a failed export leaves no
// partial bundle behind. The temporary file has no name while it is
// written (createUnnamed), where the system allows: a killed export then
// leaves nothing either.
func writeAtomically[R any](file string, stdout io.Writer, write func(io.Writer) (R, error)) (R, error) {
	if file == "-" {
		return write(stdout)
	}
	var zero R
	dir := filepath.Dir(file)
	tmp, err := createUnnamed(dir)
	unnamed := err == nil
	if !unnamed {
		tmp, err = os.CreateTemp(dir, "."+filepath.Base(file)+".tmp-*")
	}
	if err != nil {
		return zero, fmt.Errorf("%w; choose a FILE in a directory you can write", err)
	}
	if !unnamed {
		defer os.Remove(tmp.Name())
	}
	r, err := write(tmp)
	switch {
	case err != nil:
	case unnamed:
		err = publish(tmp, file)
	default:
		if err = tmp.Close(); err == nil {
			err = os.Rename(tmp.Name(), file)
		}
	}
	tmp.Close()
	if err != nil {
		return zero, fmt.Errorf("writing %s: %w", file, err)
	}
	return r, nil
}

// bundleName is what a bundle is called in messages.
func bundleName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return strings.TrimSpace(file)
}
