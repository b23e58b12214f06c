package opencl

import (
	"bytes"
	"slices"
)

// PoCL compiles a kernel's work-group function for a launch shape (the
// local size, a global offset of zero, a grid small enough for 32-bit
// indexing) at the first launch of that shape, unless the program's binary
// already holds it. A PoCL program binary is a file tree: each kernel's
// functions lie under /KERNEL/SHAPE/, where SHAPE is LX-LY-LZ with the
// suffixes -goffs0 and -smallgrid, and 0-0-0 is the generic function that
// runs any launch more slowly. The binary is written the first time it is
// read, so a binary read before any launch holds generic functions only.

// generic is the launch shape of a kernel's generic work-group function;
// genericDir is its directory.
const generic = "0-0-0"

var genericDir = []byte("/" + generic + "/")

// Specializations returns the launch shapes, other than the generic one,
// whose work-group functions the PoCL program binary bin holds, sorted and
// without repeats, in the notation of PoCL's POCL_BINARY_SPECIALIZE_WG and
// of `kcache build --specialize`. It returns nothing for a binary of any
// other runtime.
func Specializations(bin []byte) []string {
	var shapes []string
	for _, name := range genericKernels(bin) {
		eachShape(bin, name, func(shape []byte) bool {
			if s := string(shape); s != generic && !slices.Contains(shapes, s) {
				shapes = append(shapes, s)
			}
			return true
		})
	}
	slices.Sort(shapes)
	return shapes
}

// lacksLaunchCode reports whether bin is a PoCL binary read before any
// launch: its kernels have generic work-group functions and none has a
// specialized one. It is on the path of every program loaded from a tier,
// so it only searches: a few passes of bytes.Index over the binary.
func lacksLaunchCode(bin []byte) bool {
	names := genericKernels(bin)
	if len(names) == 0 {
		return false // not PoCL's, or nothing to specialize
	}
	for _, name := range names {
		specialized := false
		eachShape(bin, name, func(shape []byte) bool {
			specialized = string(shape) != generic
			return !specialized
		})
		if specialized {
			return false
		}
	}
	return true
}

// genericKernels returns the names of the kernels that have a generic
// work-group function in bin.
func genericKernels(bin []byte) []string {
	var names []string
	for off := 0; ; {
		i := bytes.Index(bin[off:], genericDir)
		if i < 0 {
			return names
		}
		end := off + i
		start := bytes.LastIndexByte(bin[off:end], '/') + 1 + off
		if start > off && isIdentifier(bin[start:end]) && !slices.Contains(names, string(bin[start:end])) {
			names = append(names, string(bin[start:end]))
		}
		off = end + 1
	}
}

// eachShape calls f with each launch shape that kernel name has a
// directory for in bin, until f returns false.
func eachShape(bin []byte, name string, f func(shape []byte) bool) {
	dir := []byte("/" + name + "/")
	for off := 0; ; {
		i := bytes.Index(bin[off:], dir)
		if i < 0 {
			return
		}
		seg := bin[off+i+len(dir):]
		off += i + 1 // the next directory may overlap this one: /a/a/1-1-1/
		end := bytes.IndexByte(seg, '/')
		if end > 0 && isShape(seg[:end]) && !f(seg[:end]) {
			return
		}
	}
}

// isIdentifier reports whether b is a C identifier, as kernel names are.
func isIdentifier(b []byte) bool {
	for i, c := range b {
		letter := c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return len(b) > 0
}

// isShape reports whether b is a launch shape: LX-LY-LZ, then optionally
// -goffs0, then optionally -smallgrid.
func isShape(b []byte) bool {
	parts := bytes.Split(b, []byte("-"))
	if len(parts) < 3 || len(parts) > 5 {
		return false
	}
	for _, p := range parts[:3] {
		if len(p) == 0 || bytes.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
			return false
		}
	}
	rest := parts[3:]
	if len(rest) > 0 && string(rest[0]) == "goffs0" {
		rest = rest[1:]
	}
	if len(rest) > 0 && string(rest[0]) == "smallgrid" {
		rest = rest[1:]
	}
	return len(rest) == 0
}
