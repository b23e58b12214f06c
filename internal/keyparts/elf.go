package keyparts

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// closure returns roots and every mapped library they need, directly or
// through each other: each DT_NEEDED name matched against mapped by the
// loaded library's DT_SONAME (or its file name, which is how the dynamic
// loader recognises a library it already loaded). Libraries of the
// process that the roots do not need are left out, so that two
// applications using the same driver get the same closure.
func closure(roots, mapped []Mapping) []Mapping {
	out := []Mapping{}
	seen := map[string]bool{}
	add := func(m Mapping) {
		if !seen[m.Path] {
			seen[m.Path] = true
			out = append(out, m)
		}
	}
	for _, r := range roots {
		add(r)
	}
	sonames := map[string]string{}
	for i := 0; i < len(out); i++ { // out grows as needed libraries are found
		needed, err := neededLibraries(out[i].Path)
		if err != nil {
			continue
		}
		for _, name := range needed {
			for _, m := range mapped {
				if providesName(m.Path, name, sonames) {
					add(m)
				}
			}
		}
	}
	return out
}

// neededLibraries returns the DT_NEEDED names of the ELF file at path.
func neededLibraries(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the libraries %s needs: %w", path, err)
	}
	defer f.Close()
	return dynStrings(f, elf.DT_NEEDED)
}

// providesName reports whether the library at path is the one the loader
// gives for the DT_NEEDED name: its file name is name, or it is a version
// of it (libstdc++.so.6.0.30 for libstdc++.so.6) whose DT_SONAME is name.
// sonames caches the names read.
func providesName(path, name string, sonames map[string]string) bool {
	base := filepath.Base(path)
	if base == name {
		return true
	}
	stem, _, ok := strings.Cut(name, ".so")
	if !ok || !strings.HasPrefix(base, stem+".so") {
		return false
	}
	so, ok := sonames[path]
	if !ok {
		so = soname(path)
		sonames[path] = so
	}
	return so == name
}

// soname returns the DT_SONAME of the ELF file at path; "" where it has
// none or cannot be read.
func soname(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	names, err := dynStrings(f, elf.DT_SONAME)
	if err != nil || len(names) == 0 {
		return ""
	}
	return names[0]
}

// dynStrings returns the strings of f's dynamic entries tagged tag, as
// elf.File.DynString does, but reading each string where it lies instead
// of the whole string table: libLLVM's holds megabytes of symbol names,
// and reading them was most of the cost of finding a driver's closure.
func dynStrings(f *elf.File, tag elf.DynTag) ([]string, error) {
	dyn := f.SectionByType(elf.SHT_DYNAMIC)
	if dyn == nil {
		return nil, nil
	}
	if int(dyn.Link) >= len(f.Sections) {
		return nil, errors.New("dynamic section links to no string table")
	}
	strtab := f.Sections[dyn.Link]
	d, err := dyn.Data()
	if err != nil {
		return nil, fmt.Errorf("reading the dynamic section: %w", err)
	}
	var out []string
	for _, off := range dynValues(f, d, tag) {
		s, err := cString(strtab, off)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// dynValues returns the values of the entries tagged tag in the dynamic
// section's data d, up to DT_NULL.
func dynValues(f *elf.File, d []byte, tag elf.DynTag) []uint64 {
	size := 16
	entry := func(b []byte) (elf.DynTag, uint64) {
		return elf.DynTag(f.ByteOrder.Uint64(b)), f.ByteOrder.Uint64(b[8:])
	}
	if f.Class == elf.ELFCLASS32 {
		size = 8
		entry = func(b []byte) (elf.DynTag, uint64) {
			return elf.DynTag(int32(f.ByteOrder.Uint32(b))), uint64(f.ByteOrder.Uint32(b[4:]))
		}
	}
	var out []uint64
	for ; len(d) >= size; d = d[size:] {
		t, v := entry(d)
		if t == elf.DT_NULL {
			break
		}
		if t == tag {
			out = append(out, v)
		}
	}
	return out
}

// cString reads the NUL-terminated string at off in sec.
func cString(sec *elf.Section, off uint64) (string, error) {
	var out []byte
	buf := make([]byte, 64)
	for off < sec.Size {
		n, err := sec.ReadAt(buf, int64(off))
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		if err != nil {
			return "", fmt.Errorf("reading a dynamic string: %w", err)
		}
		out = append(out, buf[:n]...)
		off += uint64(n)
	}
	return "", errors.New("dynamic string runs past its table")
}
