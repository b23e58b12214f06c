package disk

import (
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kcache/kcache"
)

// On-disk layout, under the cache root:
//
//	v<layoutVersion>/
//	  shards/       the shards' journals, totals and step locks (see shard.go)
//	  trim.txt      Unix time of the last maintenance pass (see trim.go)
//	  evict.lock    held by the one process running the maintenance pass
//	  <device>/<fan>/<image>/<spec>/<options>/    the key's leaf directory
//	    <n>.src     key record, binary size and checksums (see record.go),
//	                then the built binary
//	    <n>.bin     the built binary of an entry of version 1, whose
//	                record does not hold it
//	    lock        the key's build lock (see lock.go)
//	    .tmp-*      a write in progress, or left by a dead writer
//
// <fan> is the first fanHexLen hex digits of <image>'s name. Without it a
// device directory holds one directory per image, 10^6 in a cache of 10^6
// entries, and every Put that creates an entry and every eviction that
// removes one changes that directory: the kernel serializes those changes
// on its lock, so writers of one device queue there. With it they spread
// over 256 directories.
//
// The version directory keeps entries of another layout apart: a kcache of
// another version never opens them, and its size file and locks are its
// own. Clear removes every version's tree.

// layoutVersion is the version of the directory layout, which names the
// version directory. Version 1 had no <fan> level. The formats of the
// files inside carry their own versions (the key encoding's
// kcache.FormatVersion, recordVersion, blobVersion).
const layoutVersion = 2

// digestHexLen is how many hex digits of each component digest name its
// directory level: 128 bits. The name only spreads entries and makes
// collisions rare; the full key record in .src decides a hit, so a shorter
// name costs no correctness. Half the digits keep the leaf path about 140
// bytes under the root instead of 270, which matters on deep roots and on
// file systems that slow down with long names.
const digestHexLen = 32

// fanHexLen is how many hex digits of the image's name name its <fan>
// directory: 256 of them under each device.
const fanHexLen = 2

// The directory levels below the version directory, by depth.
const (
	deviceLevel  = iota // <device>
	fanLevel            // <fan>
	imageLevel          // <image>
	specLevel           // <spec>
	optionsLevel        // <options>: the leaf
	levels              // the depth of leaf directories
)

// maxSlots bounds the collision chain <n> in one leaf directory. Two keys
// share a leaf only if all four 128-bit component names collide, which no
// cache will see by accident; the bound exists so that a forged or damaged
// directory cannot make a lookup scan without end. A miss probes every
// slot: maxSlots failed opens, a few microseconds against a build's
// milliseconds.
const maxSlots = 4

// File names inside the version and leaf directories.
const (
	trimName   = "trim.txt"
	evictName  = "evict.lock"
	lockName   = "lock"
	tempPrefix = ".tmp-"
	srcSuffix  = ".src"
	binSuffix  = ".bin"
)

// versionDir returns the directory that holds this layout version's tree.
func versionDir(root string) string {
	return filepath.Join(root, "v"+strconv.Itoa(layoutVersion))
}

// leafDir returns the leaf directory of a key with digests d.
func (s *Store) leafDir(d kcache.Digests) string { return leafIn(s.dir, d) }

// EntryDir returns the directory that holds k's entry in the cache whose
// root is root (Options.Dir). Put writes slot 0 there as one file, 0.src,
// record and binary; a tool that writes a large cache straight into the
// layout (a benchmark) may write an entry of version 1 instead: the record
// (Record.MarshalBinary) in 0.src and the binary in 0.bin, which every
// lookup reads too. Everything else goes through Put, which also counts
// what it stores.
func EntryDir(root string, k *kcache.Key) string {
	return leafIn(versionDir(filepath.Clean(root)), k.Digests())
}

// leafIn returns the leaf directory of a key with digests d under the
// version directory dir.
func leafIn(dir string, d kcache.Digests) string {
	return string(appendLeaf(make([]byte, 0, len(dir)+leafPathLen), dir, d))
}

// leafPathLen is the length of a leaf's path below its version directory.
const leafPathLen = 4*(1+digestHexLen) + 1 + fanHexLen

// appendLeaf appends to b the leaf directory of a key with digests d under
// the version directory dir: plain concatenation, since the parts are
// clean, and this runs on every hit.
func appendLeaf(b []byte, dir string, d kcache.Digests) []byte {
	b = append(b, dir...)
	b = appendDigestLevel(b, d.Device)
	b = append(b, '/')
	b = hex.AppendEncode(b, d.Image[:fanHexLen/2])
	b = appendDigestLevel(b, d.Image)
	b = appendDigestLevel(b, d.Spec)
	return appendDigestLevel(b, d.Options)
}

// appendDigestLevel appends a slash and the directory name of one component
// digest (shortHex).
func appendDigestLevel(b []byte, d kcache.Digest) []byte {
	return hex.AppendEncode(append(b, '/'), d[:digestHexLen/2])
}

// appendSlotZ returns leaf's slot n record path, NUL-terminated for
// openReadZ, appended to leaf (in place where leaf has room for it).
func appendSlotZ(leaf []byte, n int) []byte {
	b := append(leaf, '/')
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, srcSuffix...)
	return append(b, 0)
}

// shortHex names one directory level after a component digest.
func shortHex(d kcache.Digest) string {
	return hex.EncodeToString(d[:digestHexLen/2])
}

// isLevelName reports whether name could be a directory of the given
// level: exactly fanHexLen lower-case hex digits at the fan level,
// digestHexLen at the others. Anything else under the version directory is
// not an entry.
func isLevelName(level int, name string) bool {
	want := digestHexLen
	if level == fanLevel {
		want = fanHexLen
	}
	if len(name) != want {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func srcPath(leaf string, n int) string { return leaf + "/" + strconv.Itoa(n) + srcSuffix }
func binPath(leaf string, n int) string { return leaf + "/" + strconv.Itoa(n) + binSuffix }

// parseSlotName splits "<n>.src" or "<n>.bin" into n and the suffix. It
// accepts only the names this package writes: n in [0, maxSlots), no
// leading zeros.
func parseSlotName(name string) (n int, suffix string, ok bool) {
	for _, suf := range [...]string{srcSuffix, binSuffix} {
		num, found := strings.CutSuffix(name, suf)
		if !found {
			continue
		}
		v, err := strconv.Atoi(num)
		if err != nil || v < 0 || v >= maxSlots || strconv.Itoa(v) != num {
			return 0, "", false
		}
		return v, suf, true
	}
	return 0, "", false
}

// imageSize is the size of a key's device image as the size limits see it.
// Headers are in the key by digest only, so their size cannot count.
func imageSize(k *kcache.Key) int64 { return int64(len(k.Image.Source)) }
