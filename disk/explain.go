package disk

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/kcache/kcache"
)

// Change is one difference between two keys: what a build would change to
// miss an entry. Component is one of "device", "compiler", "format",
// "source", "header", "spec", "options", "link_options" and "env"; Name
// says which field, header, constant or variable; Old and New are the two
// values ("" for absent), digests shortened to 16 hex digits.
type Change struct {
	Component string `json:"component"`
	Name      string `json:"name"`
	Old       string `json:"old"`
	New       string `json:"new"`
}

func (c Change) String() string {
	what := c.Component
	if c.Name != "" {
		what += " " + c.Name
	}
	return fmt.Sprintf("%s: %q -> %q", what, c.Old, c.New)
}

// CompareKeys lists what differs between two keys, component by component:
// why a lookup with key b does not find an entry built for key a.
func CompareKeys(a, b *kcache.Key) []Change {
	var out []Change
	add := func(component, name, old, new string) {
		if old != new {
			out = append(out, Change{component, name, old, new})
		}
	}
	add("device", "platform", a.Device.Platform, b.Device.Platform)
	add("device", "name", a.Device.Name, b.Device.Name)
	add("device", "version", a.Device.Version, b.Device.Version)
	add("device", "driver", a.Device.Driver, b.Device.Driver)
	add("compiler", "name", a.Compiler.Name, b.Compiler.Name)
	add("compiler", "version", a.Compiler.Version, b.Compiler.Version)
	add("compiler", "library", a.Compiler.Library, b.Compiler.Library)
	add("compiler", "library size", itoa(a.Compiler.LibrarySize), itoa(b.Compiler.LibrarySize))
	add("compiler", "library time", itoa(a.Compiler.LibraryTime), itoa(b.Compiler.LibraryTime))
	add("compiler", "files", a.Compiler.Files.String()[:shortDigest], b.Compiler.Files.String()[:shortDigest])
	add("format", "", a.Image.Format, b.Image.Format)
	if !bytes.Equal(a.Image.Source, b.Image.Source) {
		add("source", "", sourceDigest(a.Image.Source), sourceDigest(b.Image.Source))
	}
	out = append(out, diffSets("header", headerMap(a.Image.Headers), headerMap(b.Image.Headers))...)
	out = append(out, diffSets("spec", specMap(a.Spec), specMap(b.Spec))...)
	add("options", "", a.Options.Compile, b.Options.Compile)
	add("link_options", "", a.Options.Link, b.Options.Link)
	out = append(out, diffSets("env", envMap(a.Options.Env), envMap(b.Options.Env))...)
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// shortDigest is how many hex digits of a digest a Change shows.
const shortDigest = 16

func sourceDigest(src []byte) string {
	d := sha256.Sum256(src)
	return hex.EncodeToString(d[:shortDigest/2])
}

func headerMap(hs []kcache.Header) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		m[h.Name] = h.Digest.String()[:shortDigest]
	}
	return m
}

func specMap(cs []kcache.SpecConstant) map[string]string {
	m := map[string]string{}
	for _, c := range cs {
		m[strconv.FormatUint(uint64(c.ID), 10)] = hex.EncodeToString(c.Value)
	}
	return m
}

func envMap(vs []kcache.EnvVar) map[string]string {
	m := map[string]string{}
	for _, v := range vs {
		m[v.Name] = v.Value
	}
	return m
}

// diffSets lists the names whose values differ between a and b, in order.
func diffSets(component string, a, b map[string]string) []Change {
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []Change
	for _, n := range names {
		if a[n] != b[n] {
			out = append(out, Change{component, n, a[n], b[n]})
		}
	}
	return out
}

// Near is an entry close to a key, and what differs between them.
type Near struct {
	Info    Info
	Changes []Change
}

// Explain tells why key is or is not in the cache. It returns the sound
// entry for key if there is one; otherwise, up to limit entries built from
// the same source or the same image (source and headers), fewest changes
// first, each with what differs. It reads every record, no binary.
func (s *Store) Explain(ctx context.Context, key *kcache.Key, limit int) (hit *Info, near []Near, err error) {
	want := key.Digests()
	var mu sync.Mutex // protects hit and near
	err = s.WalkParallel(ctx, func(in Info) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case in.Key == nil:
		case in.Digests.Key == want.Key && in.Err == nil:
			hit = &in
		case in.Digests.Image == want.Image || bytes.Equal(in.Key.Image.Source, key.Image.Source):
			near = append(near, Near{Info: in, Changes: CompareKeys(in.Key, key)})
		}
		return nil
	})
	slices.SortStableFunc(near, func(a, b Near) int {
		return cmp.Or(cmp.Compare(len(a.Changes), len(b.Changes)), b.Info.AccessTime.Compare(a.Info.AccessTime),
			cmp.Compare(a.Info.Dir, b.Info.Dir))
	})
	if len(near) > limit {
		near = near[:limit]
	}
	return hit, near, err
}
