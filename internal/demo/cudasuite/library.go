package cudasuite

import (
	"fmt"
	"math"

	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/internal/demo/casedata"
)

// gemmTile is one tile shape of the library's GEMM.
type gemmTile struct{ bm, bn, bk, tm, tn int }

func (g gemmTile) expr(act string) string {
	return fmt.Sprintf("gemm_bias_act<%d, %d, %d, %d, %d, %s>", g.bm, g.bn, g.bk, g.tm, g.tn, act)
}

var (
	libraryTiles = []gemmTile{{64, 64, 8, 4, 4}, {64, 64, 16, 4, 4}, {128, 64, 8, 8, 4}, {64, 128, 8, 4, 8},
		{128, 128, 8, 8, 8}, {32, 32, 8, 2, 2}, {32, 64, 8, 2, 4}, {64, 32, 8, 4, 2}, {128, 32, 8, 8, 2}, {32, 128, 8, 2, 8}}
	libraryActs = []string{"Identity", "Relu", "Gelu", "Silu"}
)

// libraryCase is a module of realistic size: every tile shape times every
// activation, as an autotuned library ships them, a few hundred KB of
// CUBIN. Two of its kernels run and are checked.
func libraryCase() Case {
	const m, n, k = 300, 260, 200
	var exprs []string
	for _, t := range libraryTiles {
		for _, a := range libraryActs {
			exprs = append(exprs, t.expr(a))
		}
	}
	for _, a := range libraryActs {
		exprs = append(exprs, fmt.Sprintf("bias_act_rows<256, %s>", a))
	}
	exprs = append(exprs, "row_sums<128>", "row_sums<256>", "row_sums<512>")
	r := newRNG(16)
	a, b, bias := r.floats(m*k, -1, 1), r.floats(k*n, -1, 1), r.floats(n, -1, 1)
	gelu := func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(0.7978845608*(x+0.044715*x*x*x))) }
	ref := lazy(func() [][]float64 {
		relu, gl := make([]float64, m*n), make([]float64, m*n)
		sums := make([]float64, m)
		for i := range m {
			for j := range n {
				s := float64(bias[j])
				for p := range k {
					s += float64(a[i*k+p]) * float64(b[p*n+j])
				}
				relu[i*n+j], gl[i*n+j] = math.Max(s, 0), gelu(s)
				sums[i] += gl[i*n+j]
			}
		}
		return [][]float64{relu, gl, sums}
	})
	t1, t2 := libraryTiles[0], libraryTiles[4]
	gemm := func(t gemmTile, act string, out int) Launch {
		return Launch{Kernel: t.expr(act), Grid: cuda.Dim(ceilDiv(n, t.bn), ceilDiv(m, t.bm)), Block: cuda.Dim(t.bm / t.tm * t.bn / t.tn),
			Args: []Arg{I32(m), I32(n), I32(k), Buf(0), Buf(1), Buf(2), Buf(out)}}
	}
	return Case{
		Name: "kernel-library", Category: "library (large module)", File: "library.cu", Source: source("library.cu"),
		Options: []string{"-std=c++17"}, Headers: commonHeaders(), NameExpressions: exprs,
		Buffers: []Buffer{buf("A", casedata.F32Bytes(a), 4*m*k), buf("B", casedata.F32Bytes(b), 4*k*n), buf("bias", casedata.F32Bytes(bias), 4*n),
			buf("relu", nil, 4*m*n), buf("gelu", nil, 4*m*n), buf("sums", nil, 4*m)},
		Launches: []Launch{gemm(t1, "Relu", 3), gemm(t2, "Gelu", 4),
			{Kernel: "row_sums<256>", Grid: cuda.Dim(m), Block: cuda.Dim(256), Args: []Arg{Buf(4), Buf(5), I32(n)}}},
		Check: func(out [][]byte) error {
			want := ref()
			if err := closeTo("relu", out[3], want[0], 1e-4); err != nil {
				return err
			}
			if err := closeTo("gelu", out[4], want[1], 1e-3); err != nil {
				return err
			}
			return closeTo("sums", out[5], want[2], 1e-3)
		},
		prepare: func() { ref() },
	}
}
