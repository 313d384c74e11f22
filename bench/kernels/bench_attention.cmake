# bench_attention: decode sparse attention and indexer top-k, old vs new kernels, with the HBM
# read and dense BF16 ceilings measured in the same run (bench/kernels/bench_attention.cu).
# Included from the top level when DSV4_CUDA is on; on the GPU machine it is built with nvcc
# against the CUDA backend library of the standalone tests/cuda build (see the lead's notes).
add_executable(bench_attention ${CMAKE_CURRENT_LIST_DIR}/bench_attention.cu)
target_link_libraries(bench_attention PRIVATE dsv4_backend_cuda CUDA::cudart CUDA::cublas)
