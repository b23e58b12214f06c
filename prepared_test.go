package kcache

import (
	"bytes"
	"context"
	"slices"
	"testing"
)

// TestPrepareMatches checks that a prepared key's encoding and digests are
// what MarshalBinary and Digests give, in and out of canonical order, and
// that preparing leaves the key's own slices in the order given.
func TestPrepareMatches(t *testing.T) {
	k := &Key{
		Device:   Device{Platform: "p", Name: "n", Version: "v", Driver: "d"},
		Compiler: Compiler{Name: "c", Version: "1", Library: "/lib", LibrarySize: 3, LibraryTime: -4},
		Image: Image{Format: "f", Source: []byte("src"), Headers: []Header{
			HeaderOf("b.h", []byte("2")), HeaderOf("a.h", []byte("1"))}},
		Spec:    []SpecConstant{{ID: 2, Value: []byte("x")}, {ID: 1, Value: []byte("y")}},
		Options: BuildOptions{Compile: "-O2", Link: "l", Env: []EnvVar{{"Z", "1"}, {"A", "2"}}},
	}
	before := slices.Clone(k.Image.Headers)
	p := k.Prepare()
	if !slices.Equal(k.Image.Headers, before) {
		t.Fatal("Prepare reordered the key's headers")
	}
	enc, _ := k.MarshalBinary()
	if !bytes.Equal(p.Encoding(), enc) || p.Digests() != k.Digests() || p.Key() != k {
		t.Fatal("Prepare disagrees with MarshalBinary or Digests")
	}
	sorted := *k
	sorted.Image.Headers = []Header{before[1], before[0]}
	sorted.Spec = []SpecConstant{k.Spec[1], k.Spec[0]}
	sorted.Options.Env = []EnvVar{k.Options.Env[1], k.Options.Env[0]}
	q := sorted.Prepare()
	if !bytes.Equal(q.Encoding(), enc) || q.Digests() != p.Digests() {
		t.Fatal("order of set-like fields changed the prepared key")
	}
	var d Key
	if err := d.UnmarshalBinary(p.Encoding()); err != nil || !d.Equal(k) {
		t.Fatalf("prepared encoding does not decode to the key: %v", err)
	}
}

// preparedStore is a memory store that counts how it is asked.
type preparedStore struct {
	m                  map[Digest]Entry
	gets, preparedGets int
	lastPrepared       *Prepared
}

func (s *preparedStore) Get(_ context.Context, k *Key) (Entry, error) {
	s.gets++
	if e, ok := s.m[k.Digest()]; ok {
		return e, nil
	}
	return Entry{}, ErrMiss
}

func (s *preparedStore) GetPrepared(_ context.Context, p *Prepared) (Entry, error) {
	s.preparedGets++
	s.lastPrepared = p
	if e, ok := s.m[p.Digests().Key]; ok {
		return e, nil
	}
	return Entry{}, ErrMiss
}

func (s *preparedStore) Put(_ context.Context, k *Key, e Entry) error {
	s.m[k.Digest()] = e
	return nil
}

func (s *preparedStore) Delete(_ context.Context, k *Key) error {
	delete(s.m, k.Digest())
	return nil
}

// TestCacheUsesPreparedGetter checks that the Cache asks a store through
// GetPrepared, with the Prepared the caller handed LookupPrepared.
func TestCacheUsesPreparedGetter(t *testing.T) {
	ctx := context.Background()
	st := &preparedStore{m: map[Digest]Entry{}}
	c := New(DefaultConfig(func(string) string { return "" }), nil, Tier{Kind: OutcomeDisk, Store: st})
	k := &Key{Image: Image{Format: "f", Source: []byte("s")}}
	if err := c.Put(ctx, k, Entry{Binary: []byte("bin")}); err != nil {
		t.Fatal(err)
	}
	p := k.Prepare()
	r, pending, err := c.LookupPrepared(ctx, p)
	if err != nil || pending != nil || string(r.Binary) != "bin" || r.Digest != p.Digests().Key {
		t.Fatalf("LookupPrepared = %+v, %v, %v", r, pending, err)
	}
	if r, err := c.Get(ctx, k); err != nil || string(r.Binary) != "bin" {
		t.Fatalf("Get = %+v, %v", r, err)
	}
	if st.gets != 0 || st.preparedGets != 2 || st.lastPrepared.Digests() != p.Digests() {
		t.Fatalf("store asked %d times by Get, %d by GetPrepared", st.gets, st.preparedGets)
	}
}
