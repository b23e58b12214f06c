package keyparts

import (
	"debug/elf"
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
	return f.ImportedLibraries()
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
	names, err := f.DynString(elf.DT_SONAME)
	if err != nil || len(names) == 0 {
		return ""
	}
	return names[0]
}
