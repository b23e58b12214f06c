package main

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kcache/kcache/disk"
)

// entryJSON is one entry as `kcache ls --json` and `kcache show --json`
// print it. Its field names are a public interface (see the README).
type entryJSON struct {
	ID         string    `json:"id"`
	Device     string    `json:"device"`
	Platform   string    `json:"platform"`
	Driver     string    `json:"driver"`
	Compiler   string    `json:"compiler"`
	Format     string    `json:"format"`
	Options    string    `json:"options"`
	Kernels    []string  `json:"kernels"`
	Size       int64     `json:"size"`        // bytes on disk, record and binary
	BinarySize int64     `json:"binary_size"` // bytes of the binary
	BuildMS    float64   `json:"build_ms"`    // what the build cost
	Created    time.Time `json:"created"`
	Used       time.Time `json:"used"` // last use, to within an hour
}

func newEntryJSON(in *disk.Info) entryJSON {
	k := in.Key
	return entryJSON{
		ID:         in.ID(),
		Device:     k.Device.Name,
		Platform:   k.Device.Platform,
		Driver:     k.Device.Driver,
		Compiler:   disk.CompilerLabel(k),
		Format:     k.Image.Format,
		Options:    k.Options.Compile,
		Kernels:    kernelNames(k.Image.Source),
		Size:       in.Size,
		BinarySize: in.BinarySize,
		BuildMS:    ms(in.BuildTime),
		Created:    in.Created.UTC(),
		Used:       in.AccessTime.UTC(),
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// kernelPattern finds kernel functions in OpenCL C and CUDA sources.
var kernelPattern = regexp.MustCompile(`(?:__kernel|kernel|__global__)\s+(?:__attribute__\s*\(\(.*?\)\)\s*)?void\s+([A-Za-z_]\w*)`)

// kernelNames returns the kernel functions a source defines, in order: how
// a person recognises an entry. The scan is textual, enough to name things.
func kernelNames(src []byte) []string {
	names := []string{}
	for _, m := range kernelPattern.FindAllSubmatch(src, 64) {
		names = append(names, string(m[1]))
	}
	return names
}

// kernelsLabel joins kernel names for a table cell: the first two, then a
// count of the rest.
func kernelsLabel(names []string) string {
	switch len(names) {
	case 0:
		return "-"
	case 1, 2:
		return strings.Join(names, ",")
	}
	return strings.Join(names[:2], ",") + ",+" + itoa(len(names)-2)
}

func itoa(n int) string { return strconv.Itoa(n) }
