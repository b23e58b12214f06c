package deps

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// A record or memo that stops holding makes a source be scanned again:
// the exact path, but a slow one, and one that repeats in every new
// process while its cause does. The debug log says which place changed
// and how, so that the cause (a directory written into, a header touched
// by a build, a file too new when it was scanned) can be found without
// reading the code.

// staleness returns log attributes that describe the first observation of
// seen that no longer answers as it did, stat'ing each again in order, or
// nil where every one holds now (a place changed back since the check).
// It is for debug logs only: it stats without overlap and allocates.
func staleness(fsys *fileSystem, seen []observation) []slog.Attr {
	now := fsys.now()
	for i, o := range seen {
		n := fsys.observe(o.path, now)
		if o.holdsAs(n) {
			continue
		}
		var why string
		switch {
		case n.state != o.state:
			why = fmt.Sprintf("was %s, is %s", o.state, n.state)
		case n.state == stateOther:
			why = "not a regular file or directory"
		case !o.settled:
			why = fmt.Sprintf("changed within %v before it was scanned (too new to be trusted by stat)", o.id.window())
		default:
			why = o.id.difference(n.id)
		}
		return []slog.Attr{slog.String("place", o.path), slog.Int("index", i), slog.String("change", why)}
	}
	return nil
}

// String names a state for logs.
func (s statState) String() string {
	switch s {
	case stateMissing:
		return "absent"
	case stateFile:
		return "a file"
	case stateDir:
		return "a directory"
	case stateOther:
		return "neither file nor directory"
	case stateError:
		return "unreadable"
	case stateNotDir:
		return "under a file"
	}
	return fmt.Sprintf("state %d", uint8(s))
}

// difference says which fields of the identity differ in n.
func (id identity) difference(n identity) string {
	var parts []string
	num := func(field string, was, is uint64) {
		if was != is {
			parts = append(parts, fmt.Sprintf("%s %d to %d", field, was, is))
		}
	}
	clock := func(field string, was, is int64) {
		if was != is {
			parts = append(parts, fmt.Sprintf("%s %s to %s", field, stamp(was), stamp(is)))
		}
	}
	num("size", uint64(id.size), uint64(n.size))
	clock("mtime", id.mtime, n.mtime)
	clock("ctime", id.ctime, n.ctime)
	num("inode", id.inode, n.inode)
	num("device", id.dev, n.dev)
	return strings.Join(parts, ", ")
}

// stamp formats Unix nanoseconds for a log.
func stamp(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
