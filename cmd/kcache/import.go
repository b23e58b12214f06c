package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/opencl"
	"github.com/spf13/cobra"
)

// importJSON is `kcache import --json`. Its field names are a public
// interface (see the README).
type importJSON struct {
	File     string `json:"file"`
	Entries  int    `json:"entries"`  // entries in the bundle, all verified
	Imported int    `json:"imported"` // entries stored (or already present)
	Skipped  int    `json:"skipped"`  // entries for devices this machine lacks
	Refused  int    `json:"refused"`  // entries of a cache's own bookkeeping, which export never writes
	Bytes    int64  `json:"bytes"`    // size of the entries imported
}

func newImportCmd() *cobra.Command {
	var allDevices, asJSON, exact bool
	cmd := &cobra.Command{
		Use: "import [--all-devices] [--json] [--bytes] FILE",
		Example: `  kcache import cache.tar.zst
  curl -s https://ci.example.com/cache.tar.zst | kcache import -`,
		Short: "Add the entries of a bundle made by kcache export",
		Long: `Add the entries of FILE, a bundle made by kcache export, to the cache. The
whole bundle is verified first (every entry's key record and checksums): a
damaged bundle is refused and nothing is imported. Entries built for devices
this machine does not have are skipped unless --all-devices is given.
FILE - reads the bundle from standard input.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			ios := newStreams(cmd)
			ios.exactBytes = exact
			return runImport(cmd.Context(), ios, cmd.InOrStdin(), a[0], allDevices, asJSON)
		},
	}
	cmd.Flags().BoolVar(&allDevices, "all-devices", false, "import entries for every device, not only this machine's")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&exact, "bytes", false, "print sizes in bytes")
	return cmd
}

func runImport(ctx context.Context, ios *streams, stdin io.Reader, file string, allDevices, asJSON bool) error {
	if f, ok := stdin.(*os.File); ok && file == "-" && isTerminal(f) {
		// As zstd does: a bundle is not typed in, and waiting for one
		// on a terminal looks like a hang.
		return errors.New("refusing to read a bundle from a terminal; redirect standard input (kcache import - < cache.tar.zst) or give a FILE")
	}
	st, err := openStore()
	if err != nil {
		return err
	}
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("%w; give the path of a bundle made by kcache export", err)
		}
		defer f.Close()
		in = f
	}
	var local map[kcache.Device]bool
	if !allDevices {
		local = localDevices()
	}
	// A dependency record (a CUDA direct record too) vouches for the
	// headers a key holds by their stat, and a key is trusted as far as
	// its record: one crafted with this machine's stats and another
	// text's digests keys a source by the text it no longer has, and the
	// entry built from that text is served. Export never writes them (inode
	// and device numbers mean nothing elsewhere), so a bundle that holds
	// one was made by hand: refused, whatever the device, as a rebuild
	// claim is.
	var refused atomic.Int64
	accept := func(k *kcache.Key) bool {
		if internalKey(k) {
			refused.Add(1)
			return false
		}
		return allDevices || local[k.Device]
	}
	rep, err := st.ImportBundle(ctx, in, accept)
	if errors.Is(err, disk.ErrBadBundle) {
		return fmt.Errorf("%s refused, nothing imported: %w; export it again", bundleName(file), err)
	}
	if err != nil {
		return err
	}
	n := int(refused.Load())
	j := importJSON{File: file, Entries: rep.Entries, Imported: rep.Imported, Skipped: rep.Skipped - n, Refused: n, Bytes: rep.Bytes}
	if asJSON {
		return json.NewEncoder(ios.out).Encode(j)
	}
	fmt.Fprintf(ios.errOut, "imported %d of %s (%s) from %s\n", j.Imported, plural(j.Entries, "entry"), ios.size(j.Bytes), bundleName(file))
	if j.Refused > 0 {
		fmt.Fprintf(ios.errOut, "refused %s of a cache's own bookkeeping (dependency records, rebuild claims), which kcache export never writes\n", plural(j.Refused, "entry"))
	}
	if j.Skipped > 0 {
		fmt.Fprintf(ios.errOut, "skipped %s for devices this machine does not have; --all-devices imports them\n", plural(j.Skipped, "entry"))
	}
	return nil
}

// localDevices returns the identities of this machine's OpenCL devices, as
// keys hold them; none when OpenCL is not available.
func localDevices() map[kcache.Device]bool {
	out := map[kcache.Device]bool{}
	devs, err := opencl.AllDevices()
	if err != nil {
		return out
	}
	for _, d := range devs {
		cl, err := opencl.NewContext(d)
		if err != nil {
			continue
		}
		c := opencl.NewCache(cl, kcache.New(kcache.Config{}, nil), opencl.CacheOptions{})
		if k, err := c.Key(d, opencl.Source{}); err == nil {
			out[k.Device] = true
		}
		c.Close()
		cl.Release()
	}
	return out
}
