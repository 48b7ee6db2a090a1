// Probe of the CPU backend's contraction library (exec/onednn.h): its
// throughput per contraction class (costmodel/contraction.h) and its fixed
// cost per call, timed in this process through onednn_contractions(), the
// entry the kernels call.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "costmodel/contraction.h"

namespace fuseplan {

/// One shape the probe times: a Conv (x [N,C,H,W], w [M,C/group,kh,kw],
/// symmetric pads) or a MatMul (a x b, numpy batch broadcasting; b a
/// constant weight unless batched). `cls` is the class contraction_class()
/// gives it (tests/probe checks that it does).
struct ProbeShape {
  ContractionClass cls;
  const char* origin;   // the model layer it is taken from: "ResNet-50 layer1 3x3"
  bool conv;
  std::vector<int64_t> a, b;  // conv: x, w; matmul: a, b
  int64_t stride = 1, pad = 0, group = 1;  // conv only
};
/// The shapes, 1-3 per class, from ResNet-50, MobileNetV2 and BERT-base at
/// batch 1 (sequence 128; the tall GEMM is BERT at 4 x 128 tokens).
const std::vector<ProbeShape>& probe_shapes();
/// FLOPs of one call of shape s (costmodel/flops.cpp's primitive_flops).
double probe_shape_flops(const ProbeShape& s);
/// The output dims of shape s.
std::vector<int64_t> probe_shape_output(const ProbeShape& s);

/// One shape's measurement.
struct ShapeTiming {
  double primitive_us = 0;  // median over the timed calls of the primitive alone (onednn_last_primitive_us)
  double call_us = 0;       // median of the whole entry call (reorders and lookup included)
};

/// What probe_contractions() measured.
struct ContractionProbe {
  std::array<double, kContractionClassCount> GFLOPs{};  // per class: harmonic mean of its shapes' GFLOP/s (each
                                                        // shape's FLOPs / primitive µs · 1e-3), each shape once
  double call_us = 0;         // fixed µs per call beyond its FLOPs: eight small MatMuls called in turn, each
                              // call less its FLOPs at the skinny-GEMM rate, median
  std::vector<ShapeTiming> shapes;  // per probe_shapes() entry
  std::string note;           // one line: the measurement, each class's figure and each shape's
  int lanes = 0;              // fp32 lanes of the library's vectors (exec/onednn.h onednn_vectors)
  std::string lanes_note;     // where `lanes` comes from
};

/// Times every probe shape on `threads` contraction threads (restored
/// after): random-filled buffers (unfilled ones read the zero page), two
/// warm-up calls (the first creates the primitive and reorders the
/// constant weights), then calls until 7 and at least 20 ms, median.
/// Throws Error when oneDNN fails.
ContractionProbe probe_contractions(int threads);

}  // namespace fuseplan
