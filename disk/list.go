package disk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/kcache/kcache"
)

// ErrNoEntry is returned by Find when no entry's ID starts with the prefix.
var ErrNoEntry = errors.New("disk: no entry")

// AmbiguousError is returned by Find when several entries' IDs start with
// the prefix.
type AmbiguousError struct {
	Prefix  string
	Count   int      // how many entries match
	Matches []string // the IDs that match, at most maxMatches
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("disk: prefix %q matches %d entries: %s", e.Prefix, e.Count, strings.Join(e.Matches, ", "))
}

// maxMatches bounds AmbiguousError.Matches: a one-digit prefix of a large
// cache matches thousands, and a dozen say as much.
const maxMatches = 12

// ID returns the entry's ID: its key digest in hex, as `kcache ls` shows it.
func (i *Info) ID() string {
	if i.Key == nil {
		return ""
	}
	return i.Digests.Key.String()
}

// Find returns the sound entry whose ID (its key digest in hex) starts with
// prefix, as git resolves short hashes. No match is ErrNoEntry; several are
// an *AmbiguousError listing them. A prefix that is not hex is an error.
func (s *Store) Find(ctx context.Context, prefix string) (Info, error) {
	prefix = strings.ToLower(prefix)
	if prefix == "" || strings.Trim(prefix, "0123456789abcdef") != "" || len(prefix) > 2*len(kcache.Digest{}) {
		return Info{}, fmt.Errorf("disk: %q is not an entry ID (hex digits of a key digest)", prefix)
	}
	var (
		found   Info
		matches []string
		count   int
	)
	var mu sync.Mutex // protects found, matches and count
	err := s.WalkParallel(ctx, func(in Info) error {
		if in.Key != nil && strings.HasPrefix(in.ID(), prefix) {
			mu.Lock()
			defer mu.Unlock()
			if count == 0 {
				found = in
			}
			count++
			if len(matches) < maxMatches {
				matches = append(matches, in.ID())
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return Info{}, err
	case count == 0:
		return Info{}, fmt.Errorf("%w with ID %s", ErrNoEntry, prefix)
	case count > 1:
		return Info{}, &AmbiguousError{Prefix: prefix, Count: count, Matches: matches}
	}
	return found, nil
}

// ReadRecord reads and decodes the record of the entry in.
func (i *Info) ReadRecord() (Record, error) {
	_, rec, err := readRecord(i.RecordPath())
	return rec, err
}

// DeviceLabel names a key's device for people: its name and driver version.
func DeviceLabel(k *kcache.Key) string {
	if k == nil {
		return ""
	}
	if k.Device.Driver == "" {
		return k.Device.Name
	}
	return k.Device.Name + " (" + k.Device.Driver + ")"
}

// CompilerLabel names a key's compiler for people: its name and version.
func CompilerLabel(k *kcache.Key) string {
	if k == nil {
		return ""
	}
	return strings.TrimSpace(k.Compiler.Name + " " + k.Compiler.Version)
}
