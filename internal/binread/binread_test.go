package binread

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"
)

// fakeProgram is a driver's program whose binary grows by grow bytes at
// each copy for the first growths copies, as PoCL's does when a kernel
// first runs between the two queries. Like the driver, it writes the
// binary's size at the time of the copy, whatever it reported before.
type fakeProgram struct {
	bin     []byte
	grow    int
	growths int
}

func (p *fakeProgram) funcs() Funcs {
	return Funcs{
		Sizes: func() ([]uintptr, error) { return []uintptr{uintptr(len(p.bin)), 0}, nil },
		Copy: func(ptrs []unsafe.Pointer) error {
			if p.growths > 0 {
				p.growths--
				p.bin = append(p.bin, bytes.Repeat([]byte{0xee}, p.grow)...)
			}
			if ptrs[1] != nil {
				return errors.New("pointer for a device without a binary")
			}
			copy(unsafe.Slice((*byte)(ptrs[0]), len(p.bin)), p.bin)
			return nil
		},
	}
}

func TestReadStable(t *testing.T) {
	p := &fakeProgram{bin: []byte("binary")}
	bins, err := Read(p.funcs())
	if err != nil || len(bins) != 2 || string(bins[0]) != "binary" || bins[1] != nil {
		t.Fatalf("Read = %q, %v", bins, err)
	}
}

// TestReadGrowing: a binary that grows by more than its size during the
// copy neither corrupts memory nor is returned torn; the next read, after
// the growth, returns the whole grown binary.
func TestReadGrowing(t *testing.T) {
	p := &fakeProgram{bin: []byte("binary"), grow: 1 << 20, growths: 1}
	bins, err := Read(p.funcs())
	if err != nil {
		t.Fatal(err)
	}
	if len(bins[0]) != 6+1<<20 || !bytes.Equal(bins[0], p.bin) {
		t.Fatalf("read %d bytes, want the grown binary of %d", len(bins[0]), len(p.bin))
	}
}

func TestReadKeepsGrowing(t *testing.T) {
	p := &fakeProgram{bin: []byte("binary"), grow: 100, growths: attempts}
	if _, err := Read(p.funcs()); !errors.Is(err, ErrUnstable) {
		t.Fatalf("Read = %v, want ErrUnstable", err)
	}
}

func TestReadErrors(t *testing.T) {
	boom := errors.New("boom")
	if _, err := Read(Funcs{Sizes: func() ([]uintptr, error) { return nil, boom }}); !errors.Is(err, boom) {
		t.Errorf("sizes error: %v", err)
	}
	f := Funcs{Sizes: func() ([]uintptr, error) { return []uintptr{8}, nil }, Copy: func([]unsafe.Pointer) error { return boom }}
	if _, err := Read(f); !errors.Is(err, boom) {
		t.Errorf("copy error: %v", err)
	}
}
