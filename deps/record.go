package deps

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/wire"
)

// A dependency record is a memo (memo.go) that outlives its process: a
// new process computes the record's id from its Input alone, loads the
// record, stats what it lists, and when every stat answers as it did,
// returns the recorded headers without reading or lexing any file
// (ccache's direct mode across processes). A record is written only for
// a scan whose every observation was settled, and anything a record
// cannot vouch for (damage, another version, another id, a stat that
// differs) makes the scan run as if there were none.

// RecordStore keeps dependency records between processes. A record
// holds inode numbers and device numbers, which mean nothing on another
// machine: a store should keep records on this machine only. It need not
// verify what it returns: a record carries its own checksum, and one that
// fails it is a miss.
type RecordStore interface {
	// LoadRecord returns the record stored under id, or an error (one
	// wrapping kcache.ErrMiss when there is none).
	LoadRecord(ctx context.Context, id kcache.Digest) ([]byte, error)
	// StoreRecord stores record under id, replacing the one there.
	StoreRecord(ctx context.Context, id kcache.Digest, record []byte) error
}

// An Option configures a Scanner.
type Option func(*Scanner)

// WithRecords makes a Scanner load and store dependency records in rs, so
// that a new process's first scan of a source costs a stat per
// dependency instead of a read and lex of every header.
func WithRecords(rs RecordStore) Option {
	return func(s *Scanner) { s.records = rs }
}

// recordVersion is the version of the record encoding and of what a
// record means (the Input fields inputID hashes, the scanner's rules).
// Bump it whenever either changes: records of another version are never
// loaded, and live under other ids.
const recordVersion = 1

// recordMagic starts every record.
const recordMagic = "KCDR"

// errBadRecord marks a record that failed its checks: a miss.
var errBadRecord = errors.New("deps: damaged or foreign dependency record")

// ruleCodes are the rules a record writes as one byte; others (rules a
// later scanner adds) are written out as text under ruleLiteral.
var ruleCodes = []string{
	RuleInclude, RuleComputedInclude, RuleForcedInclude, RuleHasInclude, RuleEmbed,
	RuleDeclared, RuleManifest, RuleClock, RuleAbsent,
}

// A dependency's flags in a record.
const (
	depDigest   = 1 << iota // its digest follows
	depPathRef              // its path is that of an observation, by index
	depNameTail             // its name is a tail of its path, by offset
	depFlags    = depDigest | depPathRef | depNameTail
)

// ruleLiteral is the code of a rule written out as text.
const ruleLiteral = 0xff

// recorded reports whether m may be written as a record: only a scan
// whose every observation was settled can be trusted by stat later.
func (m *memo) recorded() bool {
	for _, o := range m.seen {
		if !o.settled {
			return false
		}
	}
	return true
}

// encodeRecord writes m, the memo of the input whose id is id. Paths are
// written as the length of the prefix they share with the previous path,
// then the rest: paths in scan order share their directories, which
// keeps a record of thousands of headers small. A dependency's path is
// almost always one the scan observed, and its name a tail of the path
// (the part under the working directory): those are written as numbers,
// so that decoding allocates no string for them.
func encodeRecord(id kcache.Digest, m *memo) []byte {
	e := recordEncoder{buf: make([]byte, 0, 64+len(m.seen)*48+len(m.trace)*40)}
	e.buf = append(e.buf, recordMagic...)
	e.uvarint(recordVersion)
	e.buf = append(e.buf, id[:]...)
	var flags byte
	if m.date {
		flags |= 1
	}
	e.buf = append(e.buf, flags)
	e.uvarint(uint64(len(m.seen)))
	index := make(map[string]int, len(m.seen))
	var prev string
	for i, o := range m.seen {
		index[o.path] = i
		e.str(prev, o.path)
		prev = o.path
		e.buf = append(e.buf, byte(o.state))
		if o.state == stateFile || o.state == stateDir {
			e.varint(o.id.size)
			e.varint(o.id.mtime)
			e.varint(o.id.ctime)
			e.uvarint(o.id.inode)
			e.uvarint(o.id.dev)
		}
		e.buf = append(e.buf, boolByte(o.settled))
	}
	e.uvarint(uint64(len(m.trace)))
	var prevPath, prevName string
	for _, d := range m.trace {
		e.dependency(d, index, &prevPath, &prevName)
	}
	sum := sha256.Sum256(e.buf)
	return append(e.buf, sum[:]...)
}

// dependency writes d: its rule's code, its flags, then its rule as text
// where it has no code, its path, its name and its digest.
func (e *recordEncoder) dependency(d Dependency, index map[string]int, prevPath, prevName *string) {
	code := byte(ruleLiteral)
	if i := slices.Index(ruleCodes, d.Rule); i >= 0 {
		code = byte(i)
	}
	var flags byte
	if d.Digest != (kcache.Digest{}) {
		flags |= depDigest
	}
	ref, isRef := index[d.Path]
	if isRef {
		flags |= depPathRef
	}
	tail := len(d.Path) - len(d.Name)
	if tail >= 0 && d.Path[tail:] == d.Name {
		flags |= depNameTail
	}
	e.buf = append(e.buf, code, flags)
	if code == ruleLiteral {
		e.str("", d.Rule)
	}
	if isRef {
		e.uvarint(uint64(ref))
	} else {
		e.str(*prevPath, d.Path)
		*prevPath = d.Path
	}
	if flags&depNameTail != 0 {
		e.uvarint(uint64(tail))
	} else {
		e.str(*prevName, d.Name)
		*prevName = d.Name
	}
	if flags&depDigest != 0 {
		e.buf = append(e.buf, d.Digest[:]...)
	}
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

type recordEncoder struct{ buf []byte }

func (e *recordEncoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *recordEncoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }

// str writes s as the length of its common prefix with prev and the rest.
func (e *recordEncoder) str(prev, s string) {
	n := 0
	for n < len(prev) && n < len(s) && prev[n] == s[n] {
		n++
	}
	e.uvarint(uint64(n))
	e.uvarint(uint64(len(s) - n))
	e.buf = append(e.buf, s[n:]...)
}

// decodeRecord parses a record and checks that it is whole, of this
// version, and the record of id. Any failure wraps errBadRecord.
func decodeRecord(id kcache.Digest, data []byte) (*memo, error) {
	if len(data) < len(recordMagic)+sha256.Size || string(data[:len(recordMagic)]) != recordMagic {
		return nil, fmt.Errorf("%w: no record header", errBadRecord)
	}
	body := data[:len(data)-sha256.Size]
	if sha256.Sum256(body) != [sha256.Size]byte(data[len(body):]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadRecord)
	}
	return parseRecord(id, body[len(recordMagic):])
}

// parseRecord parses a record's body: what follows the magic, less the
// checksum.
func parseRecord(id kcache.Digest, body []byte) (*memo, error) {
	d := recordDecoder{wire.NewDecoder(body)}
	if v := d.Uvarint(); v != recordVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", errBadRecord, v, recordVersion)
	}
	if got := d.Fixed(len(id)); d.OK && string(got) != string(id[:]) {
		return nil, fmt.Errorf("%w: the record of another input", errBadRecord)
	}
	m := &memo{}
	flags := d.byte()
	m.date = flags&1 != 0
	m.seen = d.observations()
	m.trace = d.dependencies(m.seen)
	switch {
	case !d.OK:
		return nil, fmt.Errorf("%w: malformed", errBadRecord)
	case len(d.Buf) != 0 || flags&^1 != 0:
		return nil, fmt.Errorf("%w: trailing or unknown data", errBadRecord)
	}
	for _, dep := range m.trace {
		if dep.Rule != RuleAbsent {
			m.headers = append(m.headers, kcache.Header{Name: dep.Name, Digest: dep.Digest})
		}
	}
	return m, nil
}

// recordDecoder reads a record's fields; after the first failure every
// read returns zero values and OK is false.
type recordDecoder struct {
	wire.Decoder
}

func (d *recordDecoder) byte() byte {
	if b := d.Fixed(1); b != nil {
		return b[0]
	}
	return 0
}

// str reads a string written by recordEncoder.str after prev.
func (d *recordDecoder) str(prev string) string {
	shared, rest := d.Uvarint(), d.Uvarint()
	if shared > uint64(len(prev)) || rest > uint64(len(d.Buf)) {
		d.Fail()
		return ""
	}
	tail := d.Fixed(int(rest))
	return prev[:shared] + string(tail)
}

// observations reads the observations. Their paths are decoded into one
// buffer and made one string, sliced: a record of thousands of paths
// then costs one allocation for them, not thousands.
func (d *recordDecoder) observations() []observation {
	seen := make([]observation, d.Count(4))
	ends := make([]int, len(seen))
	// Shared prefixes make the paths longer than their encoding; twice
	// it is enough for a tree of headers in a few directories, and
	// append grows what is not.
	arena := make([]byte, 0, 2*len(d.Buf))
	prevStart := 0
	for i := range seen {
		o := &seen[i]
		start := len(arena)
		shared, rest := d.Uvarint(), d.Uvarint()
		if shared > uint64(start-prevStart) || rest > uint64(len(d.Buf)) {
			d.Fail()
			return nil
		}
		arena = append(arena, arena[prevStart:prevStart+int(shared)]...)
		arena = append(arena, d.Fixed(int(rest))...)
		ends[i], prevStart = len(arena), start
		o.state = statState(d.byte())
		switch o.state {
		case stateFile, stateDir:
			o.id = identity{size: d.Varint(), mtime: d.Varint(), ctime: d.Varint(), inode: d.Uvarint(), dev: d.Uvarint()}
		case stateMissing, stateOther, stateError:
		default:
			d.Fail()
		}
		switch d.byte() {
		case 0:
		case 1:
			o.settled = true
		default:
			d.Fail()
		}
	}
	paths, start := string(arena), 0
	for i := range seen {
		seen[i].path, start = paths[start:ends[i]], ends[i]
	}
	return seen
}

// dependencies reads the dependencies, whose paths may name observations
// of seen.
func (d *recordDecoder) dependencies(seen []observation) []Dependency {
	trace := make([]Dependency, d.Count(4))
	var prevPath, prevName string
	for i := range trace {
		dep := &trace[i]
		code, flags := d.byte(), d.byte()
		switch {
		case code == ruleLiteral:
			dep.Rule = d.str("")
		case int(code) < len(ruleCodes):
			dep.Rule = ruleCodes[code]
		default:
			d.Fail()
		}
		if flags&^depFlags != 0 {
			d.Fail()
		}
		if flags&depPathRef != 0 {
			if ref := d.Uvarint(); ref < uint64(len(seen)) {
				dep.Path = seen[ref].path
			} else {
				d.Fail()
			}
		} else {
			dep.Path = d.str(prevPath)
			prevPath = dep.Path
		}
		if flags&depNameTail != 0 {
			if tail := d.Uvarint(); tail <= uint64(len(dep.Path)) {
				dep.Name = dep.Path[tail:]
			} else {
				d.Fail()
			}
		} else {
			dep.Name = d.str(prevName)
			prevName = dep.Name
		}
		if flags&depDigest != 0 {
			if b := d.Fixed(len(dep.Digest)); b != nil {
				dep.Digest = kcache.Digest(b)
			}
		}
		if !d.OK {
			return nil
		}
	}
	return trace
}
