// Package headermaptest writes header maps for tests: the format clang
// reads from a search directory that is a file (clang/lib/Lex/HeaderMap.cpp),
// which maps include names to other files. The scanner and the option
// checks refuse sources searched through one; their tests need real ones
// that clang-15 and PoCL follow.
package headermaptest

import (
	"encoding/binary"
	"os"
	"strings"
)

// Write writes at path a header map of one entry, mapping the include
// name key to the file target.
func Write(path, key, target string) error {
	strs := "\x00" + key + "\x00"
	prefix := len(strs)
	strs += target + "\x00"
	suffix := len(strs)
	strs += "\x00"
	const buckets = 2
	hash := 0
	for _, c := range strings.ToLower(key) {
		hash += int(c) * 13
	}
	b := binary.LittleEndian.AppendUint32(nil, 0x686d6170) // "hmap"
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 24+12*buckets) // strings' offset
	b = binary.LittleEndian.AppendUint32(b, 1)             // entries
	b = binary.LittleEndian.AppendUint32(b, buckets)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(target)))
	for i := range buckets {
		k, p, s := 0, 0, 0
		if i == hash&(buckets-1) {
			k, p, s = 1, prefix, suffix
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(k))
		b = binary.LittleEndian.AppendUint32(b, uint32(p))
		b = binary.LittleEndian.AppendUint32(b, uint32(s))
	}
	return os.WriteFile(path, append(b, strs...), 0o644)
}
