package kcache

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// FormatVersion is the version of the key encoding and of every format
// derived from it (digests, the on-disk layout). Bump it whenever the encoding
// changes: old entries then live under a different root and are never misread.
const FormatVersion = 2

// Key is the complete description of one build: everything that can change
// the binary a JIT compiler produces. Two keys with equal digests describe
// the same build; any difference in any field gives a different digest.
//
// Set-like fields (Image.Headers, Spec, Options.Env) are canonicalized by
// sorting before encoding, so their order does not matter. Ordered fields
// (build option strings) are hashed as given, since option order can change
// a compiler's output (include paths, for one).
type Key struct {
	Device   Device
	Compiler Compiler
	Image    Image
	Spec     []SpecConstant
	Options  BuildOptions
}

// Device identifies the target hardware and its software stack, as the
// runtime reports them. Upgrading a driver changes Driver and so the key.
type Device struct {
	Platform string // platform name, e.g. "Portable Computing Language"
	Name     string // device name
	Version  string // device version string
	Driver   string // driver version string
}

// Compiler identifies the JIT compiler. A compiler shipped as a library is
// also identified by its file's size and modification time, which change
// when it is replaced even if its version string does not, and by Files:
// a compiler is more than one library (PoCL is libpocl, the LLVM and clang
// libraries it links, the device plugins it opens, and the headers and
// bitcode it reads), and replacing any of them must change the key.
type Compiler struct {
	Name        string // e.g. "pocl", "nvrtc"
	Version     string
	Library     string // path of the compiler library, if any
	LibrarySize int64
	LibraryTime int64 // modification time, Unix nanoseconds
	// Files is the digest of the identities of every file the compiler
	// is made of (see keyparts.Files); zero where none are known.
	Files Digest
}

// Image is the device code fed to the compiler, with every header it
// includes.
type Image struct {
	Format  string // "opencl-c", "spirv", "cuda", "ptx", ...
	Source  []byte
	Headers []Header
}

// Header is one file included by an image, named as the include directive
// resolved it, and identified by the SHA-256 of its content. A digest, not
// the content, is what the key holds: a warm lookup can then reuse a
// header's digest while the file's size and mtime are unchanged instead of
// reading and hashing it again (ccache's "direct mode").
type Header struct {
	Name   string
	Digest Digest
}

// HeaderOf returns the Header for a file's name and content.
func HeaderOf(name string, content []byte) Header {
	return Header{Name: name, Digest: sha256.Sum256(content)}
}

// SpecConstant is one specialization constant: its ID and its value's bytes.
type SpecConstant struct {
	ID    uint32
	Value []byte
}

// BuildOptions holds every option that reaches the compiler: those given
// through the API and those taken from the environment.
type BuildOptions struct {
	Compile string   // compile options, as passed to the compiler
	Link    string   // link options
	Env     []EnvVar // environment variables that change the compiler's output
}

// EnvVar is one environment variable that is part of a build's identity.
type EnvVar struct {
	Name  string
	Value string
}

// Digest is a SHA-256 digest of a key or of one of its components.
type Digest [sha256.Size]byte

// String returns the digest in lower-case hex.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// ParseDigest parses a digest written by Digest.String.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(d) {
		return d, &DecodeError{What: "digest", Reason: "want 64 hex digits"}
	}
	copy(d[:], b)
	return d, nil
}

// Digests holds the digest of a whole key and one per component. The
// persistent layout names its directory levels by the component digests.
type Digests struct {
	Key     Digest // the whole key, format version included
	Device  Digest // Device and Compiler: the target of the build
	Image   Digest // Image, headers included
	Spec    Digest // specialization constants
	Options Digest // build options, environment included
}

// Component tags keep component digests apart even when their encodings
// happen to be equal bytes.
const (
	tagDevice  = "kcache/device"
	tagImage   = "kcache/image"
	tagSpec    = "kcache/spec"
	tagOptions = "kcache/options"
	tagKey     = "kcache/key"
)

// Digests computes the digest of k and of each of its components.
func (k *Key) Digests() Digests { return k.Prepare().digests }

// Digest returns the digest of the whole key.
func (k *Key) Digest() Digest { return k.Prepare().digests.Key }

// canonical returns a copy of k whose set-like fields are sorted. The byte
// slices are shared with k; only the slice headers are copied, and a field
// already in order (the usual case: scanners and backends emit sorted
// lists) is shared as it is, not copied.
func (k *Key) canonical() *Key {
	c := *k
	c.Image.Headers = sortedCopy(k.Image.Headers, func(a, b Header) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), bytes.Compare(a.Digest[:], b.Digest[:]))
	})
	c.Spec = sortedCopy(k.Spec, func(a, b SpecConstant) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), bytes.Compare(a.Value, b.Value))
	})
	c.Options.Env = sortedCopy(k.Options.Env, func(a, b EnvVar) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Value, b.Value))
	})
	return &c
}

// sortedCopy returns s if it is sorted by cmp, else a sorted copy: the
// key's own slices are never reordered.
func sortedCopy[T any](s []T, cmp func(a, b T) int) []T {
	if slices.IsSortedFunc(s, cmp) {
		return s
	}
	s = slices.Clone(s)
	slices.SortStableFunc(s, cmp)
	return s
}

// Equal reports whether k and o describe the same build: the same canonical
// encoding, not merely the same digest. The persistent tier uses it to tell a
// digest collision from a hit.
func (k *Key) Equal(o *Key) bool {
	a, _ := k.MarshalBinary()
	b, _ := o.MarshalBinary()
	return string(a) == string(b)
}
