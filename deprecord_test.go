package kcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"
)

// sharedMapStore is a mapStore shared between processes, as far as the
// Cache can tell: a Locker.
type sharedMapStore struct{ *mapStore }

func (sharedMapStore) Lock(context.Context, *Key) (func(), error) { return func() {}, nil }

// TestDependencyRecordsStayLocal: records live in the machine's shared
// tiers, never in the remote one or in a store of one process, and a
// stored record replaces the last.
func TestDependencyRecordsStayLocal(t *testing.T) {
	ctx := context.Background()
	local, private, remote := sharedMapStore{newMapStore()}, newMapStore(), newMapStore()
	c := New(Config{}, nil, Tier{Kind: OutcomeDisk, Store: private}, Tier{Kind: OutcomeDisk, Store: local}, Tier{Kind: OutcomeRemote, Store: sharedMapStore{remote}})
	id := Digest{1, 2, 3}
	if _, err := c.LoadRecord(ctx, id); !errors.Is(err, ErrMiss) {
		t.Fatalf("LoadRecord of nothing: %v, want a miss", err)
	}
	for _, rec := range []string{"first", "second"} {
		if err := c.StoreRecord(ctx, id, []byte(rec)); err != nil {
			t.Fatal(err)
		}
		got, err := c.LoadRecord(ctx, id)
		if err != nil || string(got) != rec {
			t.Errorf("LoadRecord = %q, %v; want %q", got, err, rec)
		}
	}
	if remote.puts != 0 || private.puts != 0 {
		t.Errorf("the remote tier got %d records, the private one %d", remote.puts, private.puts)
	}
	// No build's key is a record's: builds name a real compiler.
	if k := keyN(1); k.Digest() == recordKey(id).Digest() {
		t.Error("a build's key equals a record's")
	}
}

// TestDeleteRecord: a deleted record is a miss, in every tier that kept
// it, and other records stay.
func TestDeleteRecord(t *testing.T) {
	ctx := context.Background()
	a, b := sharedMapStore{newMapStore()}, sharedMapStore{newMapStore()}
	c := New(Config{}, nil, Tier{Kind: OutcomeDisk, Store: a}, Tier{Kind: OutcomeDisk, Store: b})
	for _, id := range []Digest{{1}, {2}} {
		if err := c.StoreRecord(ctx, id, []byte("record")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeleteRecord(ctx, Digest{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoadRecord(ctx, Digest{1}); !errors.Is(err, ErrMiss) {
		t.Errorf("LoadRecord after DeleteRecord: %v, want a miss", err)
	}
	for _, s := range []sharedMapStore{a, b} {
		if _, err := s.Get(ctx, recordKey(Digest{1})); err == nil {
			t.Error("a tier kept the deleted record")
		}
	}
	if got, err := c.LoadRecord(ctx, Digest{2}); err != nil || string(got) != "record" {
		t.Errorf("another record: %q, %v", got, err)
	}
}

// TestRecordLocalHit: a hit a backend served from a record of its own
// counts in its tier, with the build it saved.
func TestRecordLocalHit(t *testing.T) {
	c := New(Config{}, nil)
	c.RecordLocalHit(OutcomeDisk, 2*time.Second, time.Millisecond)
	s := c.Stats()
	if s.Disk.Hits != 1 || s.Memory.Hits != 0 || s.Remote.Hits != 0 {
		t.Errorf("hits: disk %d memory %d remote %d, want one on disk", s.Disk.Hits, s.Memory.Hits, s.Remote.Hits)
	}
	if s.SavedTime != 2*time.Second-time.Millisecond {
		t.Errorf("saved %v, want the build's time less the hit's", s.SavedTime)
	}
}

// TestDependencyRecordsWithoutLocalTier: with no local tier, records are
// misses and storing one does nothing.
func TestDependencyRecordsWithoutLocalTier(t *testing.T) {
	ctx := context.Background()
	remote := newMapStore()
	c := New(Config{}, nil, Tier{Kind: OutcomeRemote, Store: remote})
	if err := c.StoreRecord(ctx, Digest{1}, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoadRecord(ctx, Digest{1}); !errors.Is(err, ErrMiss) || remote.puts != 0 {
		t.Errorf("LoadRecord: %v, remote puts %d; want a miss and none", err, remote.puts)
	}
}

// TestPreparedRecordKey: the record key prepared from the template is
// the key Prepare makes, encoding and every digest, for any id.
func TestPreparedRecordKey(t *testing.T) {
	ids := []Digest{{}, {1, 2, 3}}
	var ones Digest
	for i := range ones {
		ones[i] = 0xff
	}
	ids = append(ids, ones)
	for i := range 200 {
		ids = append(ids, sha256.Sum256([]byte{byte(i), byte(i >> 8)}))
	}
	for _, id := range ids {
		got, want := preparedRecordKey(id), recordKey(id).Prepare()
		if got.Digests() != want.Digests() || !bytes.Equal(got.Encoding(), want.Encoding()) {
			t.Fatalf("id %x: prepared %+v %x, want %+v %x", id, got.Digests(), got.Encoding(), want.Digests(), want.Encoding())
		}
		if enc, _ := got.Key().MarshalBinary(); !bytes.Equal(enc, want.Encoding()) {
			t.Fatalf("id %x: the prepared key is not its own encoding's", id)
		}
	}
}

// TestRecordKeyTemplate derives the constants of preparedRecordKey from
// recordKey and Prepare.
func TestRecordKeyTemplate(t *testing.T) {
	k := recordKey(Digest{})
	p := k.Prepare()
	if string(p.Encoding()) != recordKeyEnc {
		t.Fatalf("recordKeyEnc = %q, want %q", recordKeyEnc, p.Encoding())
	}
	enc, bounds := k.canonical().encode()
	if bounds[1] != recordImageAt || bounds[2] != recordImageEnd {
		t.Fatalf("image component at %d:%d, want %d:%d", recordImageAt, recordImageEnd, bounds[1], bounds[2])
	}
	e := encoder{}
	e.str(k.Image.Format)
	e.uvarint(uint64(len(Digest{})))
	if at := bounds[1] + len(e.buf); at != recordIDAt {
		t.Fatalf("recordIDAt = %d, want %d", recordIDAt, at)
	}
	one := recordKey(Digest{0xff}).Prepare().Encoding()
	if !bytes.Equal(enc[:recordIDAt], one[:recordIDAt]) || one[recordIDAt] != 0xff {
		t.Fatalf("the id is not at %d of %x", recordIDAt, one)
	}
	want := p.Digests()
	if recordDigests.Device != want.Device || recordDigests.Spec != want.Spec || recordDigests.Options != want.Options {
		t.Fatalf("recordDigests = %+v, want %+v", recordDigests, want)
	}
}

// BenchmarkPrepareRecordKey compares the template with a full Prepare.
func BenchmarkPrepareRecordKey(b *testing.B) {
	id := Digest{1, 2, 3}
	b.Run("template", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			preparedRecordKey(id)
		}
	})
	b.Run("prepare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			recordKey(id).Prepare()
		}
	})
}
