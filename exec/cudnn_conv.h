// cuDNN convolution for the GPU runner's library mode (emit/cuda/lowering.h,
// the cudnn route): libcudnn.so.9 is loaded with dlopen at first use, like cuBLASLt
// and the driver, so nothing links it and binaries start without it.
// cudnnConvolutionForward with a fixed algorithm (IMPLICIT_GEMM) and FMA math
// (no TF32): deterministic, the same call for a fused and an unfused plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "emit/cuda/lowering.h"

namespace fuseplan {

/// Whether libcudnn can be loaded with every entry point used; never throws,
/// needs no GPU. `reason` (optional) gets one line when not.
bool cudnn_available(std::string* reason = nullptr);

/// cudnnGetVersion() as "9.19.0"; empty when cuDNN cannot be loaded.
std::string cudnn_version();

/// The output dims cuDNN derives from the descriptors built for `m`
/// (cudnnGetConvolutionNdForwardOutputDim): equal to m.y_dims when the
/// descriptors describe the graph's Conv. Needs no GPU. Throws Error when
/// cuDNN is missing or rejects a descriptor.
std::vector<int> cudnn_output_dims(const cuda::ConvMatch& m);

/// y = conv(x, w) for `m` on the default stream, f32 NCHW/NCDHW packed
/// device buffers (driver-API addresses). Builds descriptors and the handle
/// now (a CUDA context must be current) and returns the call to enqueue.
/// `workspace` of `ws_bytes`: the algorithm's need is checked against it.
/// Throws Error (one line with cuDNN's status string) on any failure.
std::function<void()> cudnn_conv_call(const cuda::ConvMatch& m, uint64_t x, uint64_t w, uint64_t y,
                                      uint64_t workspace, std::size_t ws_bytes);

}  // namespace fuseplan
