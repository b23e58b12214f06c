// Package disk is kcache's persistent tier: built binaries in a directory
// tree shared by every process of one user, safe against concurrent
// writers and against processes killed at any instant.
//
// # Layout
//
//	<root>/v2/<device>/<fan>/<image>/<spec>/<options>/<n>.src
//	                                                 /<n>.bin   (version 1 entries only)
//
// Each level is named by 32 hex digits of its component digest
// (kcache.Digests), as in the SYCL runtime's persistent cache; <fan>, the
// first two digits of <image>, keeps a device directory to 256 entries
// (layout.go says why). v2 is the layout's version. <n>.src holds the
// record (record.go): the full key in its canonical encoding, the binary's
// size, SHA-256 and CRC-32C, and the build time, followed by the binary
// itself, so that a hit opens and reads one file. Entries written before
// the binary moved into the record's file (entry version 1) keep it in
// <n>.bin beside the record; they are read as they are, and a Put over one
// replaces both files with one. The file appears whole by one rename and is
// the commit marker. A kcache older than entry version 2 sharing the
// directory takes such an entry for a damaged one: its lookups miss and
// rebuild (and store version 1, which this version reads), and its
// maintenance passes remove them. A lookup
// compares the full key, so keys whose digests collide take slots 0, 1, ...
// of the same directory. The version directory also holds shards/ (the
// shards' journals and totals, shard.go), trim.txt (the last maintenance
// pass, trim.go) and evict.lock.
//
// # Crash safety
//
// An entry is written to a temporary file in its directory, synced, and
// renamed into place (version 1 wrote the binary first, the record last).
// A reader trusts nothing it has not checked: a missing, truncated or
// unparsable record, or a binary whose length or CRC-32C disagrees with
// its record, is a miss
// (kcache.ErrMiss), and the caller's build goes on. Whatever a killed
// writer leaves (temporary files, a binary without its record) is never
// served and is removed by the next pass.
//
// # Processes
//
// All locks are flock(2) locks, which the kernel releases when their holder
// dies (lock.go has the table). Readers take none. Writers hold a leaf
// directory's lock only while they write one entry (two renames and an
// fsync). Store.Lock gives cross-process single-flight for builds. Every
// wait is bounded, and a caller that gives up goes on without the lock.
//
// # Eviction
//
// No Put, Get or Lock waits for eviction or maintenance. Leaves are split
// into 256 shards, each with a journal of its leaves and a total
// (shard.go), so that a Put learns the cache's total from one small file. A
// Put that takes the total over Options.MaxSize starts a background
// goroutine, which visits the shards in turn and removes the least recently
// used entries of each until the total is down to EvictTo*MaxSize: LRU
// within a step, approximate across shards. A daily pass, also in the
// background, removes entries unused for longer than
// Options.AgeThreshold and rebuilds the journals by walking the tree. The
// access time is the record's mtime; a hit refreshes it at most once an
// hour, so a warm cache read by many processes is not written. Close waits
// for the background work a bounded time; the work left undone stays on
// disk for the next writer.
//
// The background goroutine is in background.go; eviction down to the
// target, and the removal of one entry, in evict.go; one step through a
// shard (its listing and budget) in step.go; the rewrite of a shard's
// journal and total at the end of a step in swap.go; the daily maintenance
// pass in trim.go; Put's ceiling in ceiling.go.
//
// # Blobs and inspection
//
// Export and Import move one entry as a self-verifying blob (blob.go).
// Walk, Verify, Size and Clear serve the command-line tool.
//
// # What it does not know
//
// It stores opaque binaries under kcache keys: it knows no compiler, no
// device API (OpenCL, CUDA) and no other tier, and it takes no part in
// choosing tiers (package tiers does). Within the module it imports only
// the root package.
package disk
