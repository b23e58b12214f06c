package disk

import (
	"cmp"
	"context"
	"path"
	"slices"
	"sync"
	"sync/atomic"
)

// Summary is what the cache holds: the figures `kcache stats` shows.
type Summary struct {
	Entries int     // entries with a record and a binary
	Bytes   int64   // their bytes: records and binaries
	Damaged int     // slots missing their record or their binary
	MaxSize int64   // the size that triggers eviction; 0 when unlimited
	Groups  []Group // entries per device and compiler, largest first
}

// Group counts the entries built for one device by one compiler.
type Group struct {
	Device   string // device name and driver version
	Compiler string // compiler name and version
	Entries  int
	Bytes    int64
}

// Summarize counts the cache's entries and their bytes per device and
// compiler. Every entry of a device directory shares the device and
// compiler (they make up its name), so it reads one record per device
// directory and only lists and stats the rest: a summary of 10^5 entries
// costs a directory walk. Verify checks the content of every entry.
func (s *Store) Summarize(ctx context.Context) (Summary, error) {
	sum := Summary{MaxSize: s.MaxSize()}
	images, err := s.imageDirs(ctx)
	if err != nil {
		return sum, err
	}
	var (
		mu      sync.Mutex // protects groups
		groups  = map[string]*groupCount{}
		next    atomic.Int64
		wg      sync.WaitGroup
		damaged atomic.Int64
	)
	for range min(scanners(), len(images)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(images)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				entries, bytes, bad, sample := countImage(images[i])
				damaged.Add(int64(bad))
				dev := path.Dir(path.Dir(images[i])) // past the fan level
				mu.Lock()
				g := groups[dev]
				if g == nil {
					g = &groupCount{}
					groups[dev] = g
				}
				g.Entries += entries
				g.Bytes += bytes
				if len(g.samples) < maxSamples && sample != "" {
					g.samples = append(g.samples, sample)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sum.Damaged = int(damaged.Load())
	sum.Groups = s.labelGroups(groups, &sum)
	return sum, ctx.Err()
}

// groupCount is a device directory's tally, with the records of a few of
// its entries to name the device and compiler.
type groupCount struct {
	Group
	samples []string // record paths, at most maxSamples
}

// maxSamples is how many records of a device directory Summarize keeps to
// name it: the first that decodes does, and a damaged one must not leave
// a device unnamed.
const maxSamples = 3

// countImage counts the slots below an image directory by their files
// alone, and returns the record path of one entry.
func countImage(image string) (entries int, bytes int64, damaged int, sample string) {
	for _, spec := range appendLevel(nil, image, specLevel) {
		for _, leaf := range appendLevel(nil, spec, optionsLevel) {
			c, err := listLeaf(leaf)
			if err != nil {
				continue
			}
			for n, f := range c.slots {
				switch {
				case !f.used():
				case f.src == nil:
					damaged++ // a binary without its record
				default:
					entries++
					bytes += f.size()
					if sample == "" {
						sample = srcPath(leaf, n)
					}
				}
			}
		}
	}
	return entries, bytes, damaged, sample
}

// labelGroups names each device directory's group from its sample record,
// merges groups that share a name, and sorts them, largest first. A
// directory whose sample record does not decode is counted as unnamed.
func (s *Store) labelGroups(groups map[string]*groupCount, sum *Summary) []Group {
	byName := map[[2]string]*Group{}
	for _, g := range groups {
		if g.Entries == 0 {
			continue
		}
		sum.Entries += g.Entries
		sum.Bytes += g.Bytes
		id := [2]string{"(unreadable records)", ""}
		for _, sample := range g.samples {
			if _, rec, err := readRecord(sample); err == nil {
				id = [2]string{DeviceLabel(&rec.Key), CompilerLabel(&rec.Key)}
				break
			}
		}
		if byName[id] == nil {
			byName[id] = &Group{Device: id[0], Compiler: id[1]}
		}
		byName[id].Entries += g.Entries
		byName[id].Bytes += g.Bytes
	}
	out := make([]Group, 0, len(byName))
	for _, g := range byName {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Compiler, b.Compiler))
	})
	return out
}

// MaxSize returns the size above which the store evicts; 0 when eviction
// by size is off.
func (s *Store) MaxSize() int64 {
	if !s.limited() {
		return 0
	}
	return s.maxSize()
}
