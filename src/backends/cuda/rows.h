// Row copies between activations and paged pools (any dtype: rows are copied as bytes).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// y[i] = x[rows[i]] for i < n; x is [x_rows, row_bytes], y is [n, row_bytes]. A row index outside
// [0, x_rows) (the CPU backend throws) fills y[i] with 0xFF bytes (NaN for f32 and bf16), so the
// caller's checks see it; nothing outside x is read.
cudaError_t gather_rows(const void* x, int64_t x_rows, int64_t row_bytes, const int32_t* rows,
                        int64_t n, void* y, cudaStream_t stream);

// pool[rows[i]] = src[i] for i < n and 0 <= rows[i] < pool_rows; rows[i] = -1 (or any index
// outside the pool) is skipped. src is [n, row_bytes], pool [pool_rows, row_bytes]. Rows that
// repeat an index race (the CPU keeps the last); the model never repeats one.
cudaError_t scatter_rows(const void* src, int64_t n, int64_t row_bytes, const int32_t* rows,
                         void* pool, int64_t pool_rows, cudaStream_t stream);

}  // namespace dsv4::cuda
