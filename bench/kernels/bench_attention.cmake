# bench_attention: decode sparse attention and indexer top-k, old vs new kernels, with the HBM
# read and dense BF16 ceilings measured in the same run (bench/kernels/bench_attention.cu).
# Included from the top level when DSV4_CUDA is on. On the GPU machine (no top-level deps) it is
# built with nvcc against the CUDA backend library of the standalone tests/cuda build:
#   nvcc -std=c++20 -O3 -arch=sm_90a -Isrc bench/kernels/bench_attention.cu \
#        build-gpu/backend_cuda/libdsv4_backend_cuda.a -lcublas -o build-gpu/bench_attention
# CMake 3.25 knows no nvcc flag for the CUDA20 dialect (see src/backends/cuda/CMakeLists.txt).
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION OR CMAKE_CUDA20_STANDARD_COMPILE_OPTION STREQUAL "")
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
add_executable(bench_attention ${CMAKE_CURRENT_LIST_DIR}/bench_attention.cu)
target_link_libraries(bench_attention PRIVATE dsv4_backend_cuda CUDA::cudart CUDA::cublas)
