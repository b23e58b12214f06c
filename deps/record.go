package deps

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"sync"

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
// loaded, and live under other ids. Version 2: a CRC-32C for SHA-256,
// and the length of the observations' paths. Version 3: the order of the
// headers. Version 4: header names (of includes and of __has_include)
// and #warning text lexed as clang lexes them (a record of version 3
// could hold for a source whose key missed the header <inc//b.h> names),
// the working directory keyed where options may write it, and a computed
// <...> include's first blank kept. Version 5: a _Pragma pasted from
// pieces, with its string stringized, makes definitions uncertain as one
// the text names does (a record of version 4 could hold a computed
// include's one certain name where clang read another), and a probe
// that met a file where a directory was looked for (ENOTDIR) observed
// apart from one that found nothing. Version 6: an option, or a built-in
// header, that spells a _Pragma makes definitions uncertain too (a record
// of version 5 could hold the one certain name of a computed include that
// clang popped to another); options that clang's predefines buffer reads
// otherwise (a comment, a trigraph) are refused, a -U undefines its first
// token, -imacros files come before -include files, the built-in
// headers' definitions and #undefs after both, and their includes that
// may leave their directory are followed. Version 7: the compiler's
// macros enter a record's name by the digest of their list (macroListDigest).
// Version 8: a name pasted from pieces counts as named (paste.go: the clock
// and file macros, and tests for a file in a conditional, -D options' file
// tests among them), #pragma GCC dependency is refused, and the search
// path, -D values and directives are read as clang-15 reads them where a
// record of version 7 could miss a file it read. Version 9: no comment
// begins after an unterminated literal on its line (a record of version 8
// could miss a pasted __DATE__ after one), and a definition's parameters
// are no words a paste may take, nor, where every text read is balanced,
// words outside every parenthesis. Version 10: Input.LexesCPlusPlus lexes
// as C++14 does (digit separators, raw strings), a conditional's branches
// balance per #if depth, an include-like directive within parentheses
// makes the words unbalanced, and text after a byte read as no number is
// read anew as words (a record of version 9 could narrow where a paste
// took a word from such text); a branch not balanced within itself
// counts only where a build may read it (scan.branch).
const recordVersion = 10

// recordCRC is the table of a record's checksum. A checksum, not a
// digest, is what a record needs: it guards against damage on disk (a
// torn write, a bad sector), as the disk tier's CRC-32C of every binary
// does, and no digest could guard against a forger, who can write the
// binaries beside it as well. CRC-32C runs at memory speed in hardware
// where SHA-256 cost a new process 0.1 to 0.3 ms on a record of 2,500
// headers.
var recordCRC = crc32.MakeTable(crc32.Castagnoli)

// crcSize is the length of a record's checksum, after its body.
const crcSize = 4

// maxPathLen bounds one path of a record: PATH_MAX on Linux. A record
// whose paths claim more is damaged.
const maxPathLen = 4096

// maxRecordBody bounds a record's body: every count, offset and index a
// decoded record keeps fits in an int32 below it (recordedDep), and no
// scan writes a record within a thousandth of it.
const maxRecordBody = math.MaxInt32

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
	trace := m.dependencies()
	e := recordEncoder{buf: make([]byte, 0, 64+len(m.seen)*48+len(trace)*40)}
	e.buf = append(e.buf, recordMagic...)
	e.uvarint(recordVersion)
	e.buf = append(e.buf, id[:]...)
	var flags byte
	if m.date {
		flags |= 1
	}
	e.buf = append(e.buf, flags)
	e.uvarint(uint64(len(m.seen)))
	pathBytes := 0
	for _, o := range m.seen {
		pathBytes += len(o.path)
	}
	// The decoder allocates the paths at once, and only as much as they
	// need.
	e.uvarint(uint64(pathBytes))
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
	e.uvarint(uint64(len(trace)))
	var prevPath, prevName string
	for _, d := range trace {
		e.dependency(d, index, &prevPath, &prevName)
	}
	for _, i := range headerOrder(m.headers, trace) {
		e.uvarint(uint64(i))
	}
	return binary.LittleEndian.AppendUint32(e.buf, crc32.Checksum(e.buf, recordCRC))
}

// sortHeaders sorts headers as a key's encoding does (kcache.Key): the
// key of a new process's first lookup is computed from a record's
// headers, and sorting a CUB kernel's 700 headers there cost more than
// decoding the whole record. Their order changes no key.
func sortHeaders(headers []kcache.Header) {
	slices.SortFunc(headers, func(a, b kcache.Header) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), bytes.Compare(a.Digest[:], b.Digest[:]))
	})
}

// headerOrder returns, for each of a memo's headers in order, the index
// of the dependency of its trace it names: a record keeps the order of
// the headers (sorted, as sortHeaders leaves them) without sorting them
// again when it is read. A memo whose headers are not its trace's found
// dependencies (none is made so) is written in the trace's order.
func headerOrder(headers []kcache.Header, trace []Dependency) []int {
	byHeader := map[kcache.Header][]int{}
	var found []int
	for i, d := range trace {
		if d.Rule != RuleAbsent {
			h := kcache.Header{Name: d.Name, Digest: d.Digest}
			byHeader[h] = append(byHeader[h], i)
			found = append(found, i)
		}
	}
	if len(headers) != len(found) {
		return found
	}
	order := make([]int, 0, len(found))
	for _, h := range headers {
		at := byHeader[h]
		if len(at) == 0 {
			return found
		}
		order, byHeader[h] = append(order, at[0]), at[1:]
	}
	return order
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

// recordID returns the id a record names itself by, unchecked: its
// checksum and the rest are decodeRecord's to check.
func recordID(data []byte) (kcache.Digest, bool) {
	var id kcache.Digest
	if len(data) < len(recordMagic) || string(data[:len(recordMagic)]) != recordMagic {
		return id, false
	}
	d := wire.NewDecoder(data[len(recordMagic):])
	d.Uvarint() // the version, which decodeRecord checks
	copy(id[:], d.Fixed(len(id)))
	return id, d.OK
}

// decodeRecord parses a record and checks that it is whole, of this
// version, and the record of id. Any failure wraps errBadRecord.
func decodeRecord(id kcache.Digest, data []byte) (*memo, error) {
	return decodeRecordChecked(id, data, nil)
}

// decodeRecordChecked is decodeRecord that starts check on the record's
// observations as they are decoded (nil: none); check is aborted when the
// record fails.
func decodeRecordChecked(id kcache.Digest, data []byte, check *recordCheck) (*memo, error) {
	if len(data) < len(recordMagic)+crcSize || string(data[:len(recordMagic)]) != recordMagic {
		return nil, fmt.Errorf("%w: no record header", errBadRecord)
	}
	body := data[:len(data)-crcSize]
	if crc32.Checksum(body, recordCRC) != binary.LittleEndian.Uint32(data[len(body):]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadRecord)
	}
	m, err := parseRecordChecked(id, body[len(recordMagic):], check)
	if err != nil && check != nil {
		check.abort()
	}
	return m, err
}

// parseRecord parses a record's body: what follows the magic, less the
// checksum.
func parseRecord(id kcache.Digest, body []byte) (*memo, error) {
	return parseRecordChecked(id, body, nil)
}

// parseRecordChecked is parseRecord that starts check (when not nil) on
// the observations as they are decoded.
func parseRecordChecked(id kcache.Digest, body []byte, check *recordCheck) (*memo, error) {
	if len(body) > maxRecordBody {
		return nil, fmt.Errorf("%w: %d bytes", errBadRecord, len(body))
	}
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
	m.seen = d.observations(check)
	m.lazy, m.headers = d.dependencies(m.seen)
	d.order(m.lazy, m.headers)
	switch {
	case !d.OK:
		return nil, fmt.Errorf("%w: malformed", errBadRecord)
	case len(d.Buf) != 0 || flags&^1 != 0:
		return nil, fmt.Errorf("%w: trailing or unknown data", errBadRecord)
	}
	return m, nil
}

// order reads the order of the headers, an index into the trace for each
// of its found dependencies, each once, and puts headers, decoded in the
// trace's order, in that order, in place; each dependency's index into
// them follows.
func (d *recordDecoder) order(lt *lazyTrace, headers []kcache.Header) {
	if !d.OK {
		return
	}
	from := make([]int32, len(headers)) // the header at k comes from headers[from[k]]
	for k := range from {
		i := d.Uvarint()
		if i >= uint64(len(lt.deps)) || lt.deps[i].header < 0 {
			d.Fail() // out of range, absent, or named twice
			return
		}
		from[k] = lt.deps[i].header
		lt.deps[i].header = -2 - int32(k) // named: no second time
	}
	// Every found dependency was named once (as many names as found
	// dependencies, each a different one): from is a permutation.
	for i := range lt.deps {
		if h := lt.deps[i].header; h <= -2 {
			lt.deps[i].header = -2 - h
		}
	}
	permute(headers, from)
}

// permute reorders a in place so that a[k] is what a[from[k]] was, from a
// permutation of a's indexes, which it spends.
func permute(a []kcache.Header, from []int32) {
	for start := range a {
		if from[start] < 0 {
			continue // moved in an earlier cycle
		}
		first := a[start]
		k := start
		for {
			j := int(from[k])
			from[k] = -1
			if j == start {
				a[k] = first
				break
			}
			a[k] = a[j]
			k = j
		}
	}
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
// buffer of the length the record gives, unzeroed (strings.Builder), and
// sliced from it: a record of thousands of paths costs one allocation
// for them, of the size they need, and no copy.
func (d *recordDecoder) observations(check *recordCheck) []observation {
	n := d.Count(4)
	pathBytes := d.Uvarint()
	if pathBytes > uint64(n)*maxPathLen {
		d.Fail()
		return nil
	}
	seen := make([]observation, n)
	if check != nil && d.OK {
		check.start(seen)
	}
	var arena strings.Builder
	// A damaged length could claim more than the record could hold:
	// past four bytes of path for each byte of record (the paths'
	// shared prefixes are not written), the builder grows as it goes.
	arena.Grow(int(min(pathBytes, 4*uint64(len(d.Buf)))))
	prev := ""
	for i := range seen {
		o := &seen[i]
		shared, rest := d.Uvarint(), d.Uvarint()
		if shared > uint64(len(prev)) || rest > uint64(len(d.Buf)) || shared+rest > maxPathLen {
			d.Fail()
			return nil
		}
		start := arena.Len()
		arena.WriteString(prev[:shared])
		arena.Write(d.Fixed(int(rest)))
		// A builder only appends, and a string it returned keeps the
		// bytes it saw, whether or not a later write grows it: the
		// path can be sliced now.
		o.path = arena.String()[start:]
		prev = o.path
		o.state = statState(d.byte())
		switch o.state {
		case stateFile, stateDir:
			o.id = identity{size: d.Varint(), mtime: d.Varint(), ctime: d.Varint(), inode: d.Uvarint(), dev: d.Uvarint()}
		case stateMissing, stateNotDir, stateOther, stateError:
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
		if !d.OK {
			return nil
		}
		if check != nil {
			check.decoded(i + 1)
		}
	}
	if uint64(arena.Len()) != pathBytes {
		d.Fail()
		return nil
	}
	return seen
}

// dependencies reads the dependencies, whose paths may name observations
// of seen, as the record has them (lazyTrace), and the header of each
// found one, in their order.
func (d *recordDecoder) dependencies(seen []observation) (*lazyTrace, []kcache.Header) {
	lt := &lazyTrace{deps: make([]recordedDep, d.Count(4))}
	headers := make([]kcache.Header, 0, len(lt.deps))
	var prevPath, prevName string
	for i := range lt.deps {
		rd := &lt.deps[i]
		code, flags := d.byte(), d.byte()
		var rule string
		switch {
		case code == ruleLiteral:
			rule = d.str("")
			rd.rule = lt.literal(rule)
		case int(code) < len(ruleCodes):
			rule = ruleCodes[code]
			rd.rule = int32(code)
		default:
			d.Fail()
		}
		if flags&^depFlags != 0 {
			d.Fail()
		}
		var path, name string
		if flags&depPathRef != 0 {
			if ref := d.Uvarint(); ref < uint64(len(seen)) {
				rd.path, path = int32(ref), seen[ref].path
			} else {
				d.Fail()
			}
		} else {
			path = d.str(prevPath)
			prevPath = path
			rd.path = lt.literal(path)
		}
		if flags&depNameTail != 0 {
			if tail := d.Uvarint(); tail <= uint64(len(path)) {
				rd.name, name = int32(tail), path[tail:]
			} else {
				d.Fail()
			}
		} else {
			name = d.str(prevName)
			prevName = name
			rd.name = lt.literal(name)
		}
		var digest kcache.Digest
		if flags&depDigest != 0 {
			if b := d.Fixed(len(digest)); b != nil {
				digest = kcache.Digest(b)
			}
		}
		rd.header = -1
		switch {
		case rule != RuleAbsent:
			rd.header = int32(len(headers))
			headers = append(headers, kcache.Header{Name: name, Digest: digest})
		case digest != kcache.Digest{}:
			d.Fail() // an absent place has no content: no scan records one
		}
		if !d.OK {
			return nil, nil
		}
	}
	return lt, headers
}

// lazyTrace is the trace of a memo decoded from a record, as compact as
// the record holds it: a dependency's path is mostly an observation's,
// its name a tail of its path, its digest its header's. A key takes the
// headers alone, and a new process's first key of a CUB-sized source
// decoded 2,500 dependencies of 80 bytes each, fresh memory, that nothing
// read; they are made when a caller asks for the trace (Scan, a record
// written again), once.
type lazyTrace struct {
	deps     []recordedDep
	literals []string // the strings no index names
	once     sync.Once
	trace    []Dependency
}

// recordedDep is a dependency of a record by index: each field is an
// index into what the memo holds where it is not negative, and the
// literal -1-i otherwise.
type recordedDep struct {
	path   int32 // into the memo's observations
	name   int32 // the offset of the name in the path
	header int32 // into the memo's headers; -1 for an absent dependency
	rule   int32 // into ruleCodes
}

// literal keeps s and returns its index as a recordedDep holds it.
func (lt *lazyTrace) literal(s string) int32 {
	lt.literals = append(lt.literals, s)
	return -int32(len(lt.literals))
}

// dependencies returns the trace, made from the memo's observations and
// headers on the first call.
func (lt *lazyTrace) dependencies(seen []observation, headers []kcache.Header) []Dependency {
	lt.once.Do(func() {
		lt.trace = make([]Dependency, len(lt.deps))
		for i, rd := range lt.deps {
			dep := &lt.trace[i]
			if rd.rule >= 0 {
				dep.Rule = ruleCodes[rd.rule]
			} else {
				dep.Rule = lt.literals[-1-rd.rule]
			}
			if rd.path >= 0 {
				dep.Path = seen[rd.path].path
			} else {
				dep.Path = lt.literals[-1-rd.path]
			}
			if rd.name >= 0 {
				dep.Name = dep.Path[rd.name:]
			} else {
				dep.Name = lt.literals[-1-rd.name]
			}
			if rd.header >= 0 {
				dep.Digest = headers[rd.header].Digest
			}
		}
	})
	return lt.trace
}
