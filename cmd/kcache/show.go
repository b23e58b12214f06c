package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kcache/kcache/disk"
	"github.com/spf13/cobra"
)

// showJSON is `kcache show --json`: an entry's full key record. Its field
// names are a public interface (see the README).
type showJSON struct {
	entryJSON
	Path            string       `json:"path"` // the record file
	DeviceVersion   string       `json:"device_version"`
	CompilerLibrary string       `json:"compiler_library"`
	LinkOptions     string       `json:"link_options"`
	Env             []envJSON    `json:"env"`
	Spec            []specJSON   `json:"spec"`
	Headers         []headerJSON `json:"headers"`
	SHA256          string       `json:"sha256"`
	CRC32C          string       `json:"crc32c"`
	Source          string       `json:"source"` // the start of the source
}

type envJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type specJSON struct {
	ID    uint32 `json:"id"`
	Value string `json:"value"` // hex
}

type headerJSON struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// sourceHeadLines is how much of the source show prints: enough to
// recognise it.
const sourceHeadLines = 20

func newShowCmd() *cobra.Command {
	var asJSON, exact bool
	cmd := &cobra.Command{
		Use: "show [--json] [--bytes] ID",
		Example: `  kcache show 3f2a9c
  kcache show --json 3f2a9c | jq .headers`,
		Short: "Show an entry's full key record",
		Long: `Show everything an entry was built from: device, compiler, build options,
environment, specialization constants, every header with its digest and the
start of the source; and its binary's size and checksums, build time, when it
was created and last used. ID is any unique prefix of the key digest that
kcache ls prints.`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: completeIDs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			io := newStreams(cmd)
			io.exactBytes = exact
			return runShow(cmd.Context(), io, a[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&exact, "bytes", false, "print sizes in bytes")
	return cmd
}

func runShow(ctx context.Context, io *streams, id string, asJSON bool) error {
	st, err := openExisting()
	if err != nil {
		return err
	}
	in, err := findEntry(ctx, st, id)
	if err != nil {
		return err
	}
	rec, err := in.ReadRecord()
	if err != nil {
		return fmt.Errorf("entry %s: %w; run kcache verify --repair", id, err)
	}
	s := newShowJSON(&in, &rec)
	if asJSON {
		return json.NewEncoder(io.out).Encode(s)
	}
	return printShow(io, &s)
}

// findEntry resolves an ID prefix, with errors that say what to do.
func findEntry(ctx context.Context, st *disk.Store, id string) (disk.Info, error) {
	in, err := st.Find(ctx, id)
	var amb *disk.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return in, usagef("ID %s is ambiguous: it starts %d entries (%s); give more digits", id, amb.Count, strings.Join(amb.Matches, ", "))
	case errors.Is(err, disk.ErrNoEntry):
		return in, fmt.Errorf("no entry has an ID starting with %s; run kcache ls to see the IDs", id)
	case err != nil && strings.Contains(err.Error(), "is not an entry ID"):
		return in, usagef("%q is not an entry ID: give hex digits of an ID that kcache ls prints", id)
	}
	return in, err
}

func newShowJSON(in *disk.Info, rec *disk.Record) showJSON {
	k := &rec.Key
	s := showJSON{
		entryJSON:       newEntryJSON(in),
		Path:            in.RecordPath(),
		DeviceVersion:   k.Device.Version,
		CompilerLibrary: k.Compiler.Library,
		LinkOptions:     k.Options.Link,
		Env:             []envJSON{},
		Spec:            []specJSON{},
		Headers:         []headerJSON{},
		SHA256:          hex.EncodeToString(rec.SHA256[:]),
		CRC32C:          fmt.Sprintf("%08x", rec.CRC32C),
		Source:          sourceHead(k.Image.Source),
	}
	for _, e := range k.Options.Env {
		s.Env = append(s.Env, envJSON(e))
	}
	for _, c := range k.Spec {
		s.Spec = append(s.Spec, specJSON{ID: c.ID, Value: hex.EncodeToString(c.Value)})
	}
	for _, h := range k.Image.Headers {
		s.Headers = append(s.Headers, headerJSON{Name: h.Name, Digest: h.Digest.String()})
	}
	return s
}

// sourceHead returns the first sourceHeadLines lines of src.
func sourceHead(src []byte) string {
	lines := strings.SplitAfterN(string(src), "\n", sourceHeadLines+1)
	if len(lines) > sourceHeadLines {
		lines = append(lines[:sourceHeadLines], "...\n")
	}
	return strings.Join(lines, "")
}

func printShow(io *streams, s *showJSON) error {
	w := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(w, "%s\t%s\n", k, v) }
	row("id", s.ID)
	row("device", s.Device)
	row("platform", s.Platform)
	row("device version", s.DeviceVersion)
	row("driver", s.Driver)
	row("compiler", s.Compiler)
	if s.CompilerLibrary != "" {
		row("compiler library", s.CompilerLibrary)
	}
	row("format", s.Format)
	row("options", optionsCell(s.Options, false))
	if s.LinkOptions != "" {
		row("link options", s.LinkOptions)
	}
	for _, e := range s.Env {
		row("env", e.Name+"="+e.Value)
	}
	for _, c := range s.Spec {
		row("spec constant", fmt.Sprintf("%d = %s", c.ID, c.Value))
	}
	for _, h := range s.Headers {
		row("header", h.Name+"  "+h.Digest)
	}
	row("kernels", strings.Join(s.Kernels, ", "))
	row("binary", fmt.Sprintf("%s, sha256 %s, crc32c %s", io.size(s.BinarySize), s.SHA256, s.CRC32C))
	row("size on disk", io.size(s.Size))
	row("build time", duration(time.Duration(s.BuildMS*float64(time.Millisecond))))
	row("created", s.Created.Local().Format(time.RFC3339))
	row("last used", s.Used.Local().Format(time.RFC3339)+" (to within an hour)")
	row("record", s.Path)
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(io.out, "\nsource:\n%s", indent(strings.TrimRight(s.Source, "\n"))+"\n")
	return err
}
