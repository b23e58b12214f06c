package cuda

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/kcache/kcache"
)

// A module's key is a function of its Source, of the cache's identity
// (device, compiler, environment, JIT options, base directory: fixed for
// a Cache) and of the files the scanner finds. So a Cache remembers, per
// source, the headers its last key was computed from and that key,
// prepared: a later Module call of the same source whose scan finds the
// same headers reuses the prepared key instead of building, encoding and
// hashing it again (and hashing each header held in memory). The scan
// itself, a stat per header, still runs on every call: it is what tells
// that nothing changed.

// keyMemo maps sources to their last prepared keys. It is safe for
// concurrent use.
type keyMemo struct {
	seed  maphash.Seed
	mu    sync.Mutex
	m     map[uint64]*keyMemoEntry // guarded by mu; entries are immutable
	bytes int                      // the sources' bytes the entries hold; guarded by mu
}

// keyMemoEntry is one source's last key.
type keyMemoEntry struct {
	src     Source          // a deep copy: the caller may reuse its slices
	scanned []kcache.Header // the headers the scan found, after those in memory
	// prep is the key, prepared; nil where a direct record served the
	// source (direct.go), which gave only the key's digest: the key is
	// prepared when a request first needs more than a live module.
	prep   *kcache.Prepared
	digest kcache.Digest // the key's digest, from prep or the direct record
	size   int
}

// Bounds of a key memo; a source forgotten costs one key computed again.
const (
	maxKeyMemos     = 1024
	maxKeyMemoBytes = 32 << 20
)

func newKeyMemo() *keyMemo {
	return &keyMemo{seed: maphash.MakeSeed(), m: map[uint64]*keyMemoEntry{}}
}

// memoLookup is a lookup of the key memo: src's remembered entry (nil for
// none) and the hash it is kept under, which hashing the source made.
type memoLookup struct {
	e *keyMemoEntry
	h uint64
}

// lookup looks src up.
func (k *keyMemo) lookup(src Source) memoLookup {
	h := hashSource(k.seed, src)
	k.mu.Lock()
	e := k.m[h]
	k.mu.Unlock()
	if e != nil && sameSource(e.src, src) { // compared outside the lock: e is immutable
		return memoLookup{e, h}
	}
	return memoLookup{nil, h}
}

// prepared returns e's key if the scan found the same headers again and
// the key was prepared.
func (e *keyMemoEntry) prepared(scanned []kcache.Header) (*kcache.Prepared, bool) {
	if e == nil || e.prep == nil || !slices.Equal(e.scanned, scanned) {
		return nil, false
	}
	return e.prep, true
}

// directFor reports whether e is the entry a direct record left for the
// headers scanned: its digest is the key of those headers, not prepared.
func (e *keyMemoEntry) directFor(scanned []kcache.Header) bool {
	return e != nil && e.prep == nil && slices.Equal(e.scanned, scanned)
}

// put remembers prep as the key of src (whose hash is h) with the headers
// scanned, which the caller hands over: nothing may change them later.
// (A new process's first key holds hundreds; they were copied twice.)
func (k *keyMemo) put(h uint64, src Source, scanned []kcache.Header, prep *kcache.Prepared) {
	k.putEntry(h, &keyMemoEntry{src: cloneSource(src), scanned: scanned, prep: prep, digest: prep.Digests().Key, size: sourceSize(src)})
}

// putDirect remembers digest, which a direct record gave, as the key of
// src with the headers scanned, unprepared.
func (k *keyMemo) putDirect(h uint64, src Source, scanned []kcache.Header, digest kcache.Digest) {
	k.putEntry(h, &keyMemoEntry{src: cloneSource(src), scanned: scanned, digest: digest, size: sourceSize(src)})
}

// putEntry remembers e under h.
func (k *keyMemo) putEntry(h uint64, e *keyMemoEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old := k.m[h]; old != nil {
		k.bytes -= old.size
	}
	if len(k.m) >= maxKeyMemos || k.bytes+e.size > maxKeyMemoBytes {
		clear(k.m)
		k.bytes = 0
	}
	k.m[h] = e
	k.bytes += e.size
}

// hashSource hashes what sameSource compares.
func hashSource(seed maphash.Seed, src Source) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	count := func(n int) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(n))
		h.Write(b[:])
	}
	data := func(b []byte) {
		count(len(b))
		h.Write(b)
	}
	list := func(l []string) {
		count(len(l))
		for _, s := range l {
			count(len(s))
			h.WriteString(s)
		}
	}
	data(src.Code)
	count(len(src.Path))
	h.WriteString(src.Path)
	list(src.Options)
	list(src.NameExpressions)
	list(src.Depends)
	count(len(src.Headers))
	for _, hd := range src.Headers {
		count(len(hd.Name))
		h.WriteString(hd.Name)
		data(hd.Content)
	}
	return h.Sum64()
}

// sameSource reports whether a and b are the same source, every field
// equal (TestSameSourceCoversEveryField fails for a field it misses).
func sameSource(a, b Source) bool {
	return bytes.Equal(a.Code, b.Code) && a.Path == b.Path &&
		slices.Equal(a.Options, b.Options) && slices.Equal(a.NameExpressions, b.NameExpressions) &&
		slices.Equal(a.Depends, b.Depends) &&
		slices.EqualFunc(a.Headers, b.Headers, func(x, y Header) bool {
			return x.Name == y.Name && bytes.Equal(x.Content, y.Content)
		})
}

// cloneSource copies src's slices, which its caller may reuse.
func cloneSource(src Source) Source {
	src.Code = bytes.Clone(src.Code)
	src.Options = slices.Clone(src.Options)
	src.NameExpressions = slices.Clone(src.NameExpressions)
	src.Depends = slices.Clone(src.Depends)
	src.Headers = slices.Clone(src.Headers)
	for i := range src.Headers {
		src.Headers[i].Content = bytes.Clone(src.Headers[i].Content)
	}
	return src
}

// sourceSize is about the bytes a copy of src holds.
func sourceSize(src Source) int {
	n := len(src.Code) + len(src.Path)
	for _, l := range [][]string{src.Options, src.NameExpressions, src.Depends} {
		for _, s := range l {
			n += len(s) + 16
		}
	}
	for _, h := range src.Headers {
		n += len(h.Name) + len(h.Content) + 40
	}
	return n
}
