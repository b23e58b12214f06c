package disk

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcache/kcache"
	"github.com/klauspost/compress/zstd"
)

// A bundle carries entries from one cache to others, to pre-warm machines
// and container images: a tar archive compressed with zstd, holding
//
//	kcache-bundle.txt       "kcache-bundle 1\n", first
//	entries/<id>.blob       one blob per entry (see blob.go), named by the
//	                        key digest of the entry it holds
//
// Every byte of an entry is checked on the way in: the blob's framing, the
// record's own check, the binary's SHA-256 and CRC-32C, and that the name
// is the digest of the key inside.

const (
	bundleManifest = "kcache-bundle.txt"
	bundleHeader   = "kcache-bundle 1\n"
	bundleDir      = "entries/"
	blobSuffix     = ".blob"
	// maxBundleBlob bounds one blob a reader accepts: a record and a binary
	// at their largest sizes the store writes (records hold the image, at
	// most kcache.DefaultMaxImageSize by default, 1 GiB; binaries stay far
	// below it). The tar header's claim is checked before anything is read.
	maxBundleBlob = 4 << 30
	// maxDecoderWindow bounds the memory the zstd decoder may take for its
	// window: the encoder here uses 8 MiB at its default level, and a
	// forged frame must not make a reader allocate gigabytes.
	maxDecoderWindow = 64 << 20
)

// ErrBadBundle is wrapped by every error reading a bundle that is damaged,
// truncated, or not a bundle.
var ErrBadBundle = errors.New("disk: damaged or foreign bundle")

// ExportReport is what ExportBundle wrote.
type ExportReport struct {
	Entries int   // entries written
	Bytes   int64 // their blobs' size, before compression
	Skipped int   // entries that failed their checks on the way out
}

// ExportBundle writes every sound entry for which keep returns true (all,
// if keep is nil) to w as a bundle. Each entry's binary is checked against
// its SHA-256 first; an entry that fails is left out and counted.
func (s *Store) ExportBundle(ctx context.Context, w io.Writer, keep func(*Info) bool) (ExportReport, error) {
	var r ExportReport
	zw, err := zstd.NewWriter(w)
	if err != nil {
		return r, fmt.Errorf("disk: export: %w", err)
	}
	tw := tar.NewWriter(zw)
	now := s.now()
	if err := writeTarFile(tw, bundleManifest, []byte(bundleHeader), now); err != nil {
		return r, fmt.Errorf("disk: export: %w", err)
	}
	err = s.Walk(ctx, func(in Info) error {
		if in.Err != nil || (keep != nil && !keep(&in)) {
			return nil
		}
		blob, err := s.Export(ctx, in.Key)
		if err != nil {
			s.log.Warn("kcache: entry left out of the bundle", "entry", in.ID(), "err", err)
			r.Skipped++
			return nil
		}
		r.Entries++
		r.Bytes += int64(len(blob))
		return writeTarFile(tw, bundleDir+in.ID()+blobSuffix, blob, in.Created)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return r, fmt.Errorf("disk: export: %w", err)
	}
	return r, nil
}

func writeTarFile(tw *tar.Writer, name string, data []byte, mtime time.Time) error {
	hdr := &tar.Header{Name: name, Mode: int64(privateModes.file), Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// ImportReport is what ImportBundle did.
type ImportReport struct {
	Entries  int   // entries in the bundle, all verified
	Imported int   // entries stored (or already present)
	Skipped  int   // entries the accept function turned down
	Bytes    int64 // size of the blobs imported
}

// ImportBundle reads a bundle from r and stores the entries for which accept
// returns true (all, if accept is nil). It verifies the whole bundle before
// storing anything: a bundle with any damaged, truncated or foreign part is
// refused with an error wrapping ErrBadBundle, and the cache is left as it
// was. Verified blobs wait in a temporary file under the cache root, so a
// bundle larger than memory can be imported.
func (s *Store) ImportBundle(ctx context.Context, r io.Reader, accept func(*kcache.Key) bool) (ImportReport, error) {
	var rep ImportReport
	spool, err := os.CreateTemp(s.root, importPrefix+"*")
	if err != nil {
		return rep, fmt.Errorf("disk: import: %w", err)
	}
	// Unlinked at once: the file lives as long as its descriptor, so an
	// import killed at any instant leaves nothing in the root, where no
	// pass, limit or Clear would find the blobs.
	os.Remove(spool.Name())
	defer spool.Close()
	var keep []span
	var off int64
	err = ReadBundle(ctx, r, func(b *Blob, raw []byte) error {
		rep.Entries++
		if accept != nil && !accept(&b.Record.Key) {
			rep.Skipped++
			return nil
		}
		if _, err := spool.Write(raw); err != nil {
			return err
		}
		keep = append(keep, span{off, int64(len(raw))})
		off += int64(len(raw))
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("disk: import: %w", err)
	}
	// The first entry goes alone: its Put settles what a first write to a
	// cache may do (rebuild a missing total, run a due maintenance pass)
	// before the others write at once; a walk racing concurrent writers
	// would count some of them twice.
	var imported []int64
	if len(keep) > 0 {
		if imported, err = s.importSpans(ctx, spool, keep[:1]); err != nil {
			return rep, err
		}
		keep = keep[1:]
	}
	rest, err := s.importSpans(ctx, spool, keep)
	for _, n := range append(imported, rest...) {
		rep.Imported++
		rep.Bytes += n
	}
	return rep, err
}

// importPrefix names an import's spool file in the cache's root. Imports
// unlink theirs at once; Clear removes what earlier versions left.
const importPrefix = ".import-"

// span locates one verified blob in the import's spool file.
type span struct{ off, n int64 }

// importSpans stores the blobs at spans of spool, importers at a time: each
// Put syncs its binary before committing it, and syncs of different
// entries overlap. It returns the sizes of the blobs it stored.
func (s *Store) importSpans(ctx context.Context, spool *os.File, spans []span) ([]int64, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex // protects done and errs
		done []int64
		errs []error
		next atomic.Int64
	)
	for range min(importers, len(spans)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(spans)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				err := s.importSpan(ctx, spool, spans[i])
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					done = append(done, spans[i].n)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return done, fmt.Errorf("disk: import: %w", err)
	}
	return done, ctx.Err()
}

func (s *Store) importSpan(ctx context.Context, spool *os.File, sp span) error {
	blob := make([]byte, sp.n)
	if _, err := spool.ReadAt(blob, sp.off); err != nil {
		return err
	}
	return s.Import(ctx, blob)
}

// importers is how many entries an import stores at once. Storing is
// mostly waiting for fsync, which the disk serves for several files at a
// time.
const importers = 8

// ReadBundle reads a bundle from r and calls fn with every entry, decoded
// and verified, and its blob's bytes, in the bundle's order. It returns an
// error wrapping ErrBadBundle at the first part that is damaged, truncated,
// out of place or foreign, or what fn returns.
func ReadBundle(ctx context.Context, r io.Reader, fn func(b *Blob, raw []byte) error) error {
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxDecoderWindow),
		zstd.WithDecoderMaxMemory(maxDecoderWindow), zstd.WithDecoderLowmem(true))
	if err != nil {
		return bundleError("%v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	seen := map[string]bool{}
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			if i == 0 {
				return bundleError("empty")
			}
			return nil
		}
		if err != nil {
			return bundleError("%v", err)
		}
		data, err := readTarFile(tr, hdr)
		if err != nil {
			return err
		}
		if i == 0 {
			if hdr.Name != bundleManifest || !bytes.Equal(data, []byte(bundleHeader)) {
				return bundleError("no %s header: not a kcache bundle, or one of another version", bundleManifest)
			}
			continue
		}
		b, err := bundleBlob(hdr.Name, data, seen)
		if err != nil {
			return err
		}
		if err := fn(&b, data); err != nil {
			return err
		}
	}
}

// readTarFile reads the content of a regular file of at most maxBundleBlob
// bytes.
func readTarFile(tr *tar.Reader, hdr *tar.Header) ([]byte, error) {
	if hdr.Typeflag != tar.TypeReg {
		return nil, bundleError("%s is not a regular file", hdr.Name)
	}
	if hdr.Size < 0 || hdr.Size > maxBundleBlob {
		return nil, bundleError("%s: size %d out of range", hdr.Name, hdr.Size)
	}
	// ReadAll grows with what arrives, so a header claiming more than the
	// stream holds costs no large allocation.
	data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
	if err != nil {
		return nil, bundleError("%s: %v", hdr.Name, err)
	}
	if int64(len(data)) != hdr.Size {
		return nil, bundleError("%s: truncated", hdr.Name)
	}
	return data, nil
}

// bundleBlob decodes the blob named name and checks that the name is its
// key's digest and that no earlier entry had it.
func bundleBlob(name string, data []byte, seen map[string]bool) (Blob, error) {
	id, ok := strings.CutSuffix(strings.TrimPrefix(name, bundleDir), blobSuffix)
	if !strings.HasPrefix(name, bundleDir) || !ok || path.Clean(name) != name {
		return Blob{}, bundleError("unexpected file %q", name)
	}
	b, err := DecodeBlob(data)
	if err != nil {
		return Blob{}, bundleError("%s: %v", name, err)
	}
	if got := b.Record.Key.Digest().String(); got != id {
		return Blob{}, bundleError("%s holds the entry of key %s", name, got)
	}
	if seen[id] {
		return Blob{}, bundleError("%s appears twice", name)
	}
	seen[id] = true
	return b, nil
}

func bundleError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadBundle, fmt.Sprintf(format, args...))
}
