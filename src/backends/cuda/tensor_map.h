// cuTensorMapEncodeTiled for the kernels that take TMA tensor maps (attention_decode's key tiles,
// linear_w8a8_wgmma's weights), looked up once through the runtime's driver entry point (no link
// to libcuda). Null where the driver does not offer it; callers then keep their non-TMA path or
// refuse.
#pragma once

#include <cuda.h>          // CUtensorMap and the driver enums (types only)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

namespace dsv4::cuda {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder();

}  // namespace dsv4::cuda
