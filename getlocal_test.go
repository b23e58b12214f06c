package kcache

import (
	"context"
	"testing"
)

// TestGetLocal: GetLocal reads the leading disk tiers only, never a remote
// tier behind them, counts the hit it finds and no miss, and its result is
// what Get returns.
func TestGetLocal(t *testing.T) {
	disk, remote, log := twoLockers()
	c := New(Config{}, nil, Tier{OutcomeDisk, disk}, Tier{OutcomeRemote, remote})
	onDisk, onRemote := keyN(1), keyN(2)
	disk.entries[onDisk.Digest()] = Entry{Binary: []byte("disk")}
	remote.entries[onRemote.Digest()] = Entry{Binary: []byte("remote")}

	r, err := c.GetLocal(context.Background(), onDisk.Prepare())
	if err != nil || string(r.Binary) != "disk" || r.Outcome != OutcomeDisk || r.Digest != onDisk.Digest() {
		t.Fatalf("disk entry: %+v, %v", r, err)
	}
	if _, err := c.GetLocal(context.Background(), onRemote.Prepare()); !errorsIsMiss(err) {
		t.Fatalf("remote-only entry: %v, want a miss", err)
	}
	if s := c.Stats(); s.Disk.Hits != 1 || s.Disk.Misses != 0 || s.Remote.Hits != 0 || s.Remote.Misses != 0 {
		t.Errorf("stats %+v", s)
	}
	if len(*log) != 0 {
		t.Errorf("GetLocal took locks: %v", *log)
	}
	if _, ok := disk.entries[onRemote.Digest()]; ok {
		t.Error("GetLocal filled the disk from the remote tier")
	}

	// With a remote tier first, nothing is local.
	c = New(Config{}, nil, Tier{OutcomeRemote, remote}, Tier{OutcomeDisk, disk})
	if _, err := c.GetLocal(context.Background(), onDisk.Prepare()); !errorsIsMiss(err) {
		t.Fatalf("behind a remote tier: %v, want a miss", err)
	}
}

// TestReadLocal: ReadLocal reads what GetLocal reads, from the leading disk
// tiers only, and counts nothing: the request that first read the entry
// counted it.
func TestReadLocal(t *testing.T) {
	disk, remote, log := twoLockers()
	c := New(Config{}, nil, Tier{OutcomeDisk, disk}, Tier{OutcomeRemote, remote})
	onDisk, onRemote := keyN(1), keyN(2)
	disk.entries[onDisk.Digest()] = Entry{Binary: []byte("disk")}
	remote.entries[onRemote.Digest()] = Entry{Binary: []byte("remote")}
	r, err := c.ReadLocal(context.Background(), onDisk.Prepare())
	if err != nil || string(r.Binary) != "disk" || r.Outcome != OutcomeDisk || r.Digest != onDisk.Digest() {
		t.Fatalf("disk entry: %+v, %v", r, err)
	}
	if _, err := c.ReadLocal(context.Background(), onRemote.Prepare()); !errorsIsMiss(err) {
		t.Fatalf("remote-only entry: %v, want a miss", err)
	}
	if s := c.Stats(); s != (Stats{}) {
		t.Errorf("ReadLocal counted: %+v", s)
	}
	if len(*log) != 0 || len(disk.entries) != 1 {
		t.Errorf("ReadLocal took locks (%v) or filled a tier (%d disk entries)", *log, len(disk.entries))
	}
}
