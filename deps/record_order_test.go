package deps

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/kcache/kcache"
)

// keyOrder is the order of a key's headers in its encoding (kcache.Key).
func keyOrder(a, b kcache.Header) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), bytes.Compare(a.Digest[:], b.Digest[:]))
}

// TestHeadersInKeyOrder: a scan's headers, and a record's, come in the
// order a key encodes them, so that a new process's first key sorts
// nothing; the record keeps that order, and the trace keeps the scan's.
func TestHeadersInKeyOrder(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	s := settledScanner(store)
	headers, trace := scanRecorded(t, s, in)
	id, rec := store.only(t)
	m, err := decodeRecord(id, rec)
	if err != nil {
		t.Fatal(err)
	}
	scanned := headers[:len(m.headers)] // the day of __DATE__ follows them
	if !slices.IsSortedFunc(scanned, keyOrder) {
		t.Errorf("a scan's headers are not in the key's order: %v", scanned)
	}
	if dt := m.dependencies(); !slices.Equal(m.headers, scanned) || !slices.Equal(dt, trace[:len(dt)]) {
		t.Errorf("the record's headers %v\nwant %v, and its trace in the scan's order", m.headers, scanned)
	}
}

// TestRecordHeaderOrderChecked: a record whose order of headers names a
// dependency twice, an absent place, or one past the trace, under a
// checksum that matches, is refused.
func TestRecordHeaderOrderChecked(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	scanRecorded(t, settledScanner(store), in)
	id, rec := store.only(t)
	m, err := decodeRecord(id, rec)
	if err != nil {
		t.Fatal(err)
	}
	order := headerOrder(m.headers, m.dependencies())
	absent := slices.IndexFunc(m.dependencies(), func(d Dependency) bool { return d.Rule == RuleAbsent })
	if len(order) < 2 || absent < 0 {
		t.Fatalf("the tree gives %d headers and absent place %d: too few to test", len(order), absent)
	}
	body := rec[:len(rec)-crcSize]
	var tail []byte
	for _, i := range order {
		tail = binary.AppendUvarint(tail, uint64(i))
	}
	if !bytes.HasSuffix(body, tail) {
		t.Fatal("the record does not end with the order of its headers")
	}
	head := body[:len(body)-len(tail)]
	for name, bad := range map[string][]int{
		"twice":  append(slices.Clone(order[:len(order)-1]), order[0]),
		"absent": append(slices.Clone(order[:len(order)-1]), absent),
		"past":   append(slices.Clone(order[:len(order)-1]), m.dependencyCount()),
		"short":  order[:len(order)-1],
	} {
		b := slices.Clone(head)
		for _, i := range bad {
			b = binary.AppendUvarint(b, uint64(i))
		}
		sealed := binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, recordCRC))
		if _, err := decodeRecord(id, sealed); !errors.Is(err, errBadRecord) {
			t.Errorf("order %s: decoded, err %v", name, err)
		}
	}
}
