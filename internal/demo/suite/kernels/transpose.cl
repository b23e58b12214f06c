// transpose.cl: out = transpose(in) for a rows x cols row-major matrix,
// through a TILE x TILE __local tile so that both the global reads and the
// global writes are contiguous along dimension 0 (coalesced on GPUs).
#ifndef TILE
#define TILE 8
#endif

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void transpose_tiled(__global const float* restrict in, __global float* restrict out,
                     const int rows, const int cols)
{
    __local float tile[TILE][TILE + 1]; // +1 column: the transposed read would hit one bank otherwise
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int bx = get_group_id(0) * TILE; // first input column of the block
    const int by = get_group_id(1) * TILE; // first input row of the block

    if (by + ty < rows && bx + tx < cols)
        tile[ty][tx] = in[(by + ty) * cols + bx + tx];
    barrier(CLK_LOCAL_MEM_FENCE);

    // The block lands at output rows bx.., columns by..; tile[tx][ty] is in[by+tx][bx+ty].
    const int orow = bx + ty;
    const int ocol = by + tx;
    if (orow < cols && ocol < rows)
        out[orow * rows + ocol] = tile[tx][ty];
}
