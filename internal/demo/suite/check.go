package suite

import (
	"fmt"
	"math"
	"sync"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// spec is a Case together with what its Check compares, so that tests can
// synthesise the reference output and corrupt it.
type spec struct {
	Case
	expects []expect
}

// expect is one checked output buffer: exactly one of f32, u32 and u8 is
// set. Float outputs pass where |got - want| <= atol + rtol*|want| (the
// usual mixed test: atol covers results near zero, where a relative bound
// means nothing, and rtol scales with magnitude); every case documents why
// its tolerances fit its arithmetic. Integer outputs must match exactly.
type expect struct {
	buf        int
	f32        func() []float64
	rtol, atol float64
	u32        func() []uint32
	u8         func() []byte
}

// expectF32 checks buffer buf as float32 against want.
func expectF32(buf int, rtol, atol float64, want func() []float64) expect {
	return expect{buf: buf, f32: sync.OnceValue(want), rtol: rtol, atol: atol}
}

// expectU32 checks buffer buf as uint32 (or int32, or float bit patterns)
// exactly against want.
func expectU32(buf int, want func() []uint32) expect {
	return expect{buf: buf, u32: sync.OnceValue(want)}
}

// expectU8 checks buffer buf byte for byte against want.
func expectU8(buf int, want func() []byte) expect {
	return expect{buf: buf, u8: sync.OnceValue(want)}
}

// newSpec attaches the Check that compares every expectation.
func newSpec(c Case, expects ...expect) spec {
	c.Check = func(out [][]byte) error {
		for _, e := range expects {
			if e.buf >= len(out) {
				return fmt.Errorf("%s: buffer %d missing from output", c.Name, e.buf)
			}
			if err := e.compare(out[e.buf]); err != nil {
				return fmt.Errorf("%s: buffer %q: %w", c.Name, c.Buffers[e.buf].Name, err)
			}
		}
		return nil
	}
	c.prepare = func() {
		for _, e := range expects {
			e.encoded()
		}
	}
	return spec{Case: c, expects: expects}
}

// compare checks got against the expectation, element by element.
func (e expect) compare(got []byte) error {
	switch {
	case e.f32 != nil:
		return casedata.CompareF32(got, e.f32(), e.rtol, e.atol)
	case e.u32 != nil:
		return casedata.CompareU32(got, e.u32())
	default:
		return casedata.CompareU8(got, e.u8())
	}
}

// encoded returns the expectation's reference as device bytes.
func (e expect) encoded() []byte {
	switch {
	case e.f32 != nil:
		return casedata.F32Bytes(narrow(e.f32()))
	case e.u32 != nil:
		return casedata.U32Bytes(e.u32())
	default:
		return append([]byte(nil), e.u8()...)
	}
}

// widen converts float32 inputs to float64 for the references, which are
// computed in double precision.
func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// narrow rounds references to float32.
func narrow(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// bits returns the IEEE bit patterns of v, for outputs that merely move
// floats around (transpose, compaction) and so must match exactly.
func floatBits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}
