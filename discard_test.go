package kcache

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// undeletable is a tier whose deletes fail.
type undeletable struct{ *mapStore }

func (undeletable) Delete(context.Context, *Key) error { return errors.New("read-only") }

func TestDiscard(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		store     Store
		wantLock  bool
		wantWarns int
	}{
		{"deleted: the caller builds and stores", newMapStore(), true, 0},
		{"kept by its tier: the caller builds without storing", undeletable{newMapStore()}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			c := New(Config{}, testLogger(&log), Tier{OutcomeDisk, tc.store})
			if err := c.Put(ctx, keyN(1), Entry{Binary: []byte("refused")}); err != nil {
				t.Fatal(err)
			}
			r, p, err := c.Discard(ctx, keyN(1))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(log.String(), "removing an unusable entry"); got != tc.wantWarns {
				t.Errorf("%d warnings, want %d:\n%s", got, tc.wantWarns, log.String())
			}
			if !tc.wantLock {
				if p != nil || string(r.Binary) != "refused" {
					t.Fatalf("pending %v, binary %q: want the entry the tier kept", p, r.Binary)
				}
				return
			}
			if p == nil {
				t.Fatalf("no build lock after discarding; found %q", r.Binary)
			}
			p.Commit(ctx, []byte("fresh"), time.Second)
			if got, err := c.Get(ctx, keyN(1)); err != nil || string(got.Binary) != "fresh" {
				t.Errorf("after the rebuild: %q, %v; want the fresh binary", got.Binary, err)
			}
		})
	}
}
