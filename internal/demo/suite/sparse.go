package suite

import (
	"math/rand/v2"
	"slices"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// Sparse linear algebra: SpMV in CSR (scalar and vector kernels) and ELL.

// csr is a sparse matrix in compressed sparse row form.
type csr struct {
	rows, cols int
	rowptr     []int32
	colidx     []int32
	vals       []float32
}

// randomCSR draws a rows x cols matrix whose row i has rowLen(i) nonzeros
// at distinct, sorted columns, with values in [-1, 1).
func randomCSR(r *rand.Rand, rows, cols int, rowLen func(i int) int) csr {
	m := csr{rows: rows, cols: cols, rowptr: make([]int32, 1, rows+1)}
	for i := range rows {
		picked := r.Perm(cols)[:min(rowLen(i), cols)]
		slices.Sort(picked)
		for _, c := range picked {
			m.colidx = append(m.colidx, int32(c))
			m.vals = append(m.vals, -1+2*r.Float32())
		}
		m.rowptr = append(m.rowptr, int32(len(m.colidx)))
	}
	return m
}

// mul returns A*x in double precision.
func (m csr) mul(x []float32) []float64 {
	y := make([]float64, m.rows)
	for i := range m.rows {
		for j := m.rowptr[i]; j < m.rowptr[i+1]; j++ {
			y[i] += float64(m.vals[j]) * float64(x[m.colidx[j]])
		}
	}
	return y
}

// spmvTol is the absolute tolerance of the SpMV cases: rows hold at most
// ~120 nonzeros in [-1, 1) times x in [-1, 1), so the float32 error bound
// n·ε·Σ|a·x| is at most 120·6e-8·30 ≈ 2e-4 (the summation order differs
// between kernels, so the bound, not bit equality, is the contract).
const spmvTol = 1e-3

// csrCase builds a CSR SpMV case for either kernel.
func csrCase(name, kernel, file, options string, m csr, x []float32, global, local []int) spec {
	cs := Case{
		Name:     name,
		Category: "sparse linear algebra",
		Source:   source(file),
		Options:  options,
		Buffers: []Buffer{
			in("rowptr", casedata.I32Bytes(m.rowptr)), in("colidx", casedata.I32Bytes(m.colidx)),
			in("vals", casedata.F32Bytes(m.vals)), in("x", casedata.F32Bytes(x)), out("y", m.rows),
		},
		Launches: []Launch{{
			Kernel: kernel, Global: global, Local: local,
			Args: args(I32(int32(m.rows)), BufferArg(0), BufferArg(1), BufferArg(2), BufferArg(3), BufferArg(4)),
		}},
	}
	return newSpec(cs, expectF32(4, 1e-5, spmvTol, func() []float64 { return m.mul(x) }))
}

// spmvCSRScalar: 1000 x 1000, 0 to 16 nonzeros per row (empty rows
// included), the regular sparsity the scalar kernel suits.
func spmvCSRScalar() spec {
	r := newRand(6)
	m := randomCSR(r, 1000, 1000, func(int) int { return r.IntN(17) })
	x := uniform(r, m.cols, -1, 1)
	return csrCase("spmv-csr-scalar", "spmv_csr_scalar", "spmv_csr_scalar.cl", "",
		m, x, dims(roundUp(m.rows, 64)), dims(64))
}

// spmvCSRVector: 1024 x 2048 with a skewed row-length distribution (mostly
// short rows, one in sixteen with 40 to 120 nonzeros), the irregular case
// the vector kernel exists for. Eight lanes per row, eight rows per group.
func spmvCSRVector() spec {
	const lanes, wg = 8, 64
	r := newRand(7)
	m := randomCSR(r, 1024, 2048, func(int) int {
		if r.IntN(16) == 0 {
			return 40 + r.IntN(81)
		}
		return r.IntN(9)
	})
	x := uniform(r, m.cols, -1, 1)
	return csrCase("spmv-csr-vector", "spmv_csr_vector", "spmv_csr_vector.cl", "-DLANES=8 -DWG=64",
		m, x, dims(roundUp(m.rows*lanes, wg)), dims(wg))
}

// spmvELL: 777 x 777 with 1 to 12 nonzeros per row, converted to
// column-major ELLPACK of width max(row length), padded with column -1.
func spmvELL() spec {
	r := newRand(8)
	m := randomCSR(r, 777, 777, func(int) int { return 1 + r.IntN(12) })
	x := uniform(r, m.cols, -1, 1)
	width := 0
	for i := range m.rows {
		width = max(width, int(m.rowptr[i+1]-m.rowptr[i]))
	}
	cols := make([]int32, width*m.rows)
	vals := make([]float32, width*m.rows)
	for i := range m.rows {
		for k := range width {
			j := m.rowptr[i] + int32(k)
			if j < m.rowptr[i+1] {
				cols[k*m.rows+i], vals[k*m.rows+i] = m.colidx[j], m.vals[j]
			} else {
				cols[k*m.rows+i] = -1
			}
		}
	}
	cs := Case{
		Name:     "spmv-ell",
		Category: "sparse linear algebra",
		Source:   source("spmv_ell.cl"),
		Buffers: []Buffer{
			in("cols", casedata.I32Bytes(cols)), in("vals", casedata.F32Bytes(vals)), in("x", casedata.F32Bytes(x)), out("y", m.rows),
		},
		Launches: []Launch{{
			Kernel: "spmv_ell", Global: dims(roundUp(m.rows, 64)), Local: dims(64),
			Args: args(I32(int32(m.rows)), I32(int32(width)), BufferArg(0), BufferArg(1), BufferArg(2), BufferArg(3)),
		}},
	}
	return newSpec(cs, expectF32(3, 1e-5, spmvTol, func() []float64 { return m.mul(x) }))
}
