package cuda

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"runtime/trace"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/wire"
	"github.com/kcache/kcache/objcache"
)

// A new process's first request of a source reads one file: the source's
// direct record. The usual way reads two and computes the key between
// them: the dependency record of each scan input (named by the input's
// id), then, with the headers it gives, the key, built and prepared, and
// the entry under it. On a small kernel that was 170-200 us of cold work
// against the floor's one file read of 30-40 us (bench/RESULTS-cuda.md),
// spread over a dozen steps, so no one step made cheaper showed.
//
// A direct record is named by what a process computes without reading
// any header: the cache's identity (device, driver, compiler and its
// files, the environment and JIT options the key holds, the base
// directory), the ids of the source's scan inputs (each the SHA-256 of
// every field of the input, its working directory and the scanner's
// build: deps.Identify), and what else the key takes from the request
// (the program's name, the key's options, the name expressions, the names
// of the headers in memory). It holds the digest of the key the source's
// binary is stored under, the dependency record of each input, and the
// binary. A request whose record decodes, and whose inputs' records all
// hold by stat (deps.Scanner.AdoptRecord, the check of the usual way),
// has that key: every other part of the key is in the record's name. It
// then loads the binary without building, preparing or looking up the
// key. Anything else (no record, a stale or damaged one, a binary the
// driver refuses) goes the usual way, and a usual way that finds the
// binary in the machine's tiers writes the record for the next process.
//
// A small kernel's records list a few places, stat'd on the request's
// goroutine before the load. A CUB kernel's list hundreds: their stats run
// on goroutines of their own while the binary loads, and the module is
// handed back only once every one answered as recorded (as the usual way's
// first key overlaps them, scaninput.go); where one did not, the module
// stays in the object tier under its own key, which it is the binary of,
// and the request goes the usual way. A record duplicates its binary;
// binaries larger than maxDirectImage are not kept twice.

// directVersion is the version of the direct record's encoding and of
// what its name covers. Bump it whenever either changes, or the key's
// parts that the name stands for: records of another version live under
// other names and are never read.
const directVersion = 1

// directMagic starts every direct record.
const directMagic = "KCDI"

// maxDirectImage is the largest binary a direct record keeps: the suite's
// largest module is 785 KB, and past a megabyte the second read the record
// saves is small beside the read of the binary itself.
const maxDirectImage = 1 << 20

// errDirectUnusable stops the object tier's build of a module that a
// direct record named but could not load: Module goes the usual way.
var errDirectUnusable = errors.New("cuda: direct record unusable")

// directRequest is a request's direct record name and scan inputs,
// computed once: a lookup that misses hands them to storeDirect.
type directRequest struct {
	id  kcache.Digest
	ins []deps.Identified
}

// direct is a decoded direct record.
type direct struct {
	key       kcache.Digest
	buildTime time.Duration
	records   [][]byte // one per scan input, in scanInputs' order
	image     []byte   // the stored image, as the entry holds it
}

// directRequestOf names src's direct record.
func (c *Cache) directRequestOf(src Source, p plan) (*directRequest, error) {
	ins, err := deps.Identify(scanInputs(src, p))
	if err != nil {
		return nil, err
	}
	base := c.directBase()
	h := sha256.New()
	b := make([]byte, 0, 256)
	b = append(b, "kcache/cuda-direct\x00"...)
	b = append(b, base[:]...)
	b = binary.AppendUvarint(b, uint64(len(ins)))
	h.Write(b)
	for _, in := range ins {
		in.WriteID(h)
	}
	b = appendString(b[:0], programName(src))
	b = appendStrings(b, p.keyOptions)
	b = appendString(b, p.format)
	b = appendStrings(b, src.NameExpressions)
	b = binary.AppendUvarint(b, uint64(len(src.Headers)))
	for _, hd := range src.Headers {
		b = appendString(b, hd.Name)
	}
	h.Write(b)
	req := &directRequest{ins: ins}
	h.Sum(req.id[:0])
	return req, nil
}

// directBase returns the digest of what every key of this cache holds
// alike: the device, the compiler (waiting for its files' digest, as a
// key does), the environment and JIT options the key holds, and the base
// directory, under the record version.
func (c *Cache) directBase() kcache.Digest {
	c.directOnce.Do(func() {
		d := c.identityDigest(c.id.compiler())
		b := binary.AppendUvarint([]byte("kcache/cuda-direct-base\x00"), directVersion)
		b = append(b, d[:]...)
		b = appendString(b, c.baseDir)
		c.directDigest = sha256.Sum256(b)
	})
	return c.directDigest
}

// identityDigest is the digest of a key that holds only what every key of
// this cache holds alike, with comp as its compiler: the device, the
// environment and JIT options the key holds.
func (c *Cache) identityDigest(comp kcache.Compiler) kcache.Digest {
	k := &kcache.Key{Device: c.id.dev, Compiler: comp, Options: kcache.BuildOptions{Link: c.jitLink(), Env: c.env}}
	return k.Prepare().Digests().Key
}

// appendStrings appends l, counted, each string as appendString does.
func appendStrings(b []byte, l []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(l)))
	for _, s := range l {
		b = appendString(b, s)
	}
	return b
}

// moduleDirect serves src from its direct record. It returns nil where
// the record cannot serve it, with the request for storeDirect where the
// record was looked for (nil where src has no name: a working directory
// that cannot be read).
func (c *Cache) moduleDirect(ctx context.Context, src Source, p plan, h uint64) (*CachedModule, *directRequest) {
	start := time.Now()
	region := trace.StartRegion(ctx, regionDirect)
	req, d, scanned, confirm, ok := c.lookupDirect(ctx, src, p)
	region.End()
	if !ok {
		return nil, req
	}
	outcome := kcache.OutcomeMemory // unless this call loads it
	m, err := c.modules.GetOrLoad(ctx, d.key, func(context.Context) (*moduleEntry, int64, bool) {
		e, err := c.fromBlob(d.image)
		if err != nil {
			return nil, 0, false
		}
		e.digest, e.outcome, e.buildTime = d.key, kcache.OutcomeDisk, d.buildTime
		outcome = kcache.OutcomeDisk
		return e, int64(len(e.blob)), true
	}, func(context.Context) (*moduleEntry, int64, error) {
		return nil, 0, objcache.Transient(errDirectUnusable)
	})
	if err != nil {
		if errors.Is(err, errDirectUnusable) {
			// The usual way reads the entry itself, and deletes it where
			// the driver refuses it; this record goes too, or every
			// process would read it first.
			_ = c.bins.DeleteRecord(context.WithoutCancel(ctx), req.id)
		}
		return nil, req
	}
	region = trace.StartRegion(ctx, regionConfirm)
	held := confirm()
	region.End()
	if !held {
		// The records' files changed: the module is the binary of the
		// old ones.
		m.Release()
		return nil, req
	}
	defer trace.StartRegion(ctx, regionRemember).End()
	if outcome == kcache.OutcomeDisk {
		c.bins.RecordMemory(false, 0)
		c.bins.RecordLocalHit(kcache.OutcomeDisk, d.buildTime, time.Since(start))
	} else {
		c.bins.RecordMemory(true, d.buildTime)
	}
	c.keys.putDirect(h, src, scanned, d.key)
	return &CachedModule{h: m, Outcome: outcome}, nil
}

// lookupDirect reads src's direct record and begins the check of its
// inputs' records: ok says the record decoded, with the headers scanned,
// and confirm whether it names src's key (nothing found with it may be
// used before confirm returns true). req is nil where src has no name (a
// working directory that cannot be read).
func (c *Cache) lookupDirect(ctx context.Context, src Source, p plan) (req *directRequest, d direct, scanned []kcache.Header, confirm deps.Confirm, ok bool) {
	region := trace.StartRegion(ctx, regionDirectName)
	req, err := c.directRequestOf(src, p)
	region.End()
	if err != nil {
		return nil, d, nil, nil, false
	}
	data, ok := c.ahead.take(req.id)
	if !ok {
		if data, err = c.bins.LoadRecord(ctx, req.id); err != nil {
			return req, d, nil, nil, false
		}
	}
	region = trace.StartRegion(ctx, regionDirectDecode)
	d, err = decodeDirect(data)
	region.End()
	if err != nil || len(d.records) != len(req.ins) {
		return req, d, nil, nil, false
	}
	defer trace.StartRegion(ctx, regionAdopt).End()
	confirms := make([]deps.Confirm, len(req.ins))
	for i, in := range req.ins {
		if scanned, confirms[i], ok = c.scanner.AdoptRecord(ctx, scanned, in, d.records[i]); !ok {
			// Checks begun go on to their end and decide nothing.
			return req, d, nil, nil, false
		}
	}
	if len(confirms) == 1 {
		return req, d, scanned, confirms[0], true
	}
	return req, d, scanned, func() bool {
		for _, f := range confirms {
			if !f() {
				return false
			}
		}
		return true
	}, true
}

// storeDirect writes src's direct record after the usual way served m
// from the machine's or the fleet's tiers, whose entry is the binary of
// its key, or built and stored it: a build that was not stored (a file
// changed during the compile) may not be the binary of its key, and a
// module found live may be such a build. Only binaries up to
// maxDirectImage, and records deps.Scanner.RecordOf gives, are written. A record that
// cannot be written costs the next process the usual way, nothing more.
//
// The records are the scanner's last scans of the inputs, which another
// request of this process may have made after m's key was computed (a
// header edited in between): they are written beside m's image only where
// the key they give is m's, or a new process would find them holding and
// serve the image of the old header.
func (c *Cache) storeDirect(ctx context.Context, req *directRequest, src Source, p plan, m *CachedModule) {
	e := m.h.Value()
	switch m.Outcome {
	case kcache.OutcomeDisk, kcache.OutcomeRemote, kcache.OutcomeWaited:
	case kcache.OutcomeBuilt:
		if !e.stored {
			return
		}
	default:
		return
	}
	if len(e.blob) > maxDirectImage {
		return
	}
	d := direct{key: e.digest, buildTime: e.buildTime, image: e.blob}
	headers := memoryHeaders(src)
	for _, in := range req.ins {
		rec, hs, ok := c.scanner.RecordOf(in)
		if !ok {
			return
		}
		d.records = append(d.records, rec)
		headers = append(headers, hs...)
	}
	if c.keyWith(src, p, headers).Prepare().Digests().Key != e.digest {
		return
	}
	if err := c.writeDirect(context.WithoutCancel(ctx), req.id, d); err != nil {
		c.bins.Logger().Debug("kcache: direct record not stored", "program", programName(src), "err", err)
	}
}

// writeDirect stores d as the direct record id, and puts id first in the
// list of records a new Cache reads ahead (prefetch.go).
func (c *Cache) writeDirect(ctx context.Context, id kcache.Digest, d direct) error {
	if err := c.bins.StoreRecord(ctx, id, d.encode()); err != nil {
		return err
	}
	return c.rememberDirect(ctx, id)
}

// encode writes d: the magic and version, the key's digest, the build
// time, each input's record, then the image. The disk tier's checksum
// covers it, as it covers every entry.
func (d direct) encode() []byte {
	n := len(directMagic) + 16 + len(d.key) + len(d.image)
	for _, r := range d.records {
		n += len(r) + 8
	}
	b := make([]byte, 0, n)
	b = append(b, directMagic...)
	b = binary.AppendUvarint(b, directVersion)
	b = append(b, d.key[:]...)
	b = binary.AppendVarint(b, int64(d.buildTime))
	b = binary.AppendUvarint(b, uint64(len(d.records)))
	for _, r := range d.records {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	b = binary.AppendUvarint(b, uint64(len(d.image)))
	return append(b, d.image...)
}

// decodeDirect parses a direct record. Its slices share data.
func decodeDirect(data []byte) (direct, error) {
	if len(data) < len(directMagic) || string(data[:len(directMagic)]) != directMagic {
		return direct{}, errors.New("cuda: not a direct record")
	}
	r := wire.NewDecoder(data[len(directMagic):])
	if v := r.Uvarint(); r.OK && v != directVersion {
		return direct{}, errors.New("cuda: direct record of another version")
	}
	var d direct
	copy(d.key[:], r.Fixed(len(d.key)))
	d.buildTime = time.Duration(r.Varint())
	n := r.Count(1)
	d.records = make([][]byte, 0, n)
	for range n {
		d.records = append(d.records, r.Bytes())
	}
	d.image = r.Bytes()
	if !r.OK || len(r.Buf) != 0 || d.buildTime < 0 {
		return direct{}, errors.New("cuda: damaged direct record")
	}
	return d, nil
}
