package opencl

import (
	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
)

// Source is an OpenCL C program to build through the cache.
type Source struct {
	// Code is the program text.
	Code []byte
	// Path is the file Code was read from, if any, for messages. The
	// driver is given the text alone: includes are searched from the
	// working directory, as PoCL searches them, not from Path's directory.
	Path string
	// Options are the build options. Their -I directories are searched for
	// headers, their -D and -U options expand computed includes, and
	// every header found becomes part of the key, so editing a header
	// causes a rebuild (see package deps for the rules).
	Options string
	// Depends are files the build depends on that no scanner can see
	// (read by the program at build time, or named in a way that cannot
	// be followed), relative to the working directory: each file's
	// content enters the key, and a missing one is checked again on every
	// lookup.
	Depends []string
}

// FormatOpenCLC names OpenCL C source in a key's Image.Format.
const FormatOpenCLC = "opencl-c"

// deviceIdentity returns the device and compiler parts of a key for d:
// what the runtime reports about the device and driver, and the file
// identity of the driver libraries loaded in this process.
func deviceIdentity(d Device) (kcache.Device, kcache.Compiler) {
	p := d.Platform()
	return keyparts.OpenCLDevice{
		PlatformName:    p.Name(),
		PlatformVendor:  p.Vendor(),
		PlatformVersion: p.Version(),
		Name:            d.Name(),
		Version:         d.Version(),
		DriverVersion:   d.DriverVersion(),
		OpenCLCVersion:  d.OpenCLCVersion(),
	}.Identity()
}
