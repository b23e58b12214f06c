package suite

// specs lists every case of the suite in presentation order. Each builder
// seeds its own generator, so a case's inputs depend only on its builder.
func specs() []spec {
	return []spec{
		sgemmNaive(),
		sgemmTiled(),
		sgemv(),
		transposeTiled(),
		axpyVec4(),
		spmvCSRScalar(),
		spmvCSRVector(),
		spmvELL(),
		jacobi2D(),
		heat3D(),
		conv1D(),
		reduceSum(),
		scanBlelloch(),
		histogram256(),
		bitonicSort(),
		radixSort(),
		fftStockham(),
		gaussianBlur(),
		sobel(),
		median3x3(),
		bilateral(),
		nbody(),
		mandelbrot(),
		softmaxRows(),
		layerNorm(),
		blackScholes(),
		streamCompaction(),
	}
}
