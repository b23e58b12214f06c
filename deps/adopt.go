package deps

import (
	"context"
	"io"
	"slices"

	"github.com/kcache/kcache"
)

// A caller that keeps an entry of its own for a request (the cuda
// package's direct records: a source's key and binary in the one file a
// new process reads first) may keep the dependency records of the
// request's inputs inside it, and hand each back to the scanner, which
// checks it exactly as it checks a record of its RecordStore: the caller
// then reads one file where it read three (the record, then the binary).
// A record of a few places (earlyInlinePlaces) is checked on the caller's
// goroutine; a larger one, hundreds of places for a CUB kernel, by stats
// on goroutines of their own while the caller loads what the record names,
// as AppendHeadersEarly checks a record of the store.

// Identified is an input with the working directory it is scanned in,
// read once (Identify), for a caller that names an entry of its own by its
// inputs.
type Identified struct {
	Input Input
	// WorkDir is the working directory Input is scanned in: Input.WorkDir,
	// or the process's when that is empty.
	WorkDir string
}

// Identify returns each input with its working directory; inputs whose
// WorkDir is empty share the process's, read once.
func Identify(ins []Input) ([]Identified, error) {
	out := make([]Identified, len(ins))
	wd := "" // the process's, once read
	for i, in := range ins {
		dir, err := inputWorkDir(in, wd)
		if err != nil {
			return nil, err
		}
		if in.WorkDir == "" {
			wd = dir
		}
		out[i] = Identified{Input: in, WorkDir: dir}
	}
	return out, nil
}

// WriteID writes to h what names in's dependency record (its id is the
// SHA-256 of these bytes): every field of the input, the working
// directory, the record version and the scanner's build. Inputs that write
// the same bytes are scanned alike, so a name hashed from them names one
// input's record: AdoptRecord trusts a record found under it.
func (in Identified) WriteID(h io.Writer) { writeInput(h, in.Input, in.WorkDir) }

// maxAdoptedRecord bounds the records RecordOf gives and AdoptRecord
// takes: a widened key of every file of a search path lists thousands of
// places, and a caller that keeps records beside other data should not
// keep megabytes of them.
const maxAdoptedRecord = 1 << 20

// RecordOf returns the dependency record of the last scan of in.Input in
// this process, encoded, for AdoptRecord in another process, with the
// headers it gives: the last scan of the input may have been made after
// the caller's key (another request's, a header edited since), and a
// caller that keeps the record beside something of its key checks that
// the headers are the key's. ok is false, and there is no record, unless
// the scan holds now, every stat it made was settled, it expands no
// __DATE__ (the key holds the day), the input has no PrivateDir (its
// record names a placeholder), and the record is at most maxAdoptedRecord
// bytes.
func (s *Scanner) RecordOf(in Identified) (rec []byte, headers []kcache.Header, ok bool) {
	if in.Input.PrivateDir != "" {
		return nil, nil, false
	}
	m, _ := s.memos.lookup(in.Input, in.WorkDir)
	if m == nil || m.date || !m.recorded() || !m.valid(s.fs) {
		return nil, nil, false
	}
	rec = encodeRecord(inputID(in.Input, in.WorkDir), m)
	if len(rec) > maxAdoptedRecord {
		return nil, nil, false
	}
	return rec, m.headers, true
}

// AdoptRecord appends to dst the headers of in.Input that rec gives, where
// rec is a record RecordOf returned for in (in any process), found under
// a name the caller hashed from in.WriteID, and every stat it lists
// answers as it did; the scan is then this process's memo of the input,
// as a record loaded from the store becomes. The record's own id is not
// computed again: the name it was found under covers everything the id
// does.
//
// A record of more than a few places is checked on other goroutines: ok
// says it decoded, and the caller must not use anything found with the
// headers (a key, a binary) before confirm returns true; when it returns
// false the record was stale, and the caller scans as usual (the memo is
// kept only once it held). A smaller record, or one checked against this
// process's memo of the input, is checked before AdoptRecord returns, and
// confirm returns true at once. Where this process has a memo of the
// input already, the memo must hold and give the record's headers.
// Otherwise ok is false and dst comes back as it was: a record that is
// damaged, of another version, too large, dated or stale, or of other
// headers than the memo's, leaves the caller to scan as usual.
func (s *Scanner) AdoptRecord(ctx context.Context, dst []kcache.Header, in Identified, rec []byte) (_ []kcache.Header, confirm Confirm, ok bool) {
	if in.Input.PrivateDir != "" || len(rec) > maxAdoptedRecord {
		return dst, nil, false
	}
	id, ok := recordID(rec)
	if !ok {
		return dst, nil, false
	}
	own, h := s.memos.lookup(in.Input, in.WorkDir)
	if own != nil {
		// This process's memo is newer than any record: the record
		// stands only where the memo holds and gives its headers.
		m, err := decodeRecord(id, rec)
		if err != nil || m.date || own.date || !slices.Equal(own.headers, m.headers) || !own.valid(s.fs) {
			return dst, nil, false
		}
		return append(dst, own.headers...), confirmed, true
	}
	// The stats begin while the record is decoded (recordCheck).
	r := loadedRecord{id: id, check: newRecordCheck(s.fs), bytes: len(rec)}
	m, err := decodeRecordChecked(id, rec, r.check)
	if err != nil {
		return dst, nil, false
	}
	if m.date {
		r.check.abort() // its stats would decide nothing
		return dst, nil, false
	}
	r.m = m
	if len(m.seen) > earlyInlinePlaces {
		return append(dst, m.headers...), s.confirmLater(ctx, r, in.Input, in.WorkDir, h), true
	}
	if !r.holds(ctx, s, in.Input) {
		return dst, nil, false
	}
	s.memos.put(h, id, in.Input, in.WorkDir, m)
	return append(dst, m.headers...), confirmed, true
}
