// Small models for the CPU backend's layout assignment (graph/layout.h),
// shared by its unit tests and the bit-identity tests of the CPU backend.
#pragma once

#include <string>

namespace fuseplan::layout_graphs {

// conv -> bias -> Relu -> conv -> bias (+ residual r) -> Relu -> GlobalAveragePool.
inline std::string residual(int c, const std::string& extra_operand = "") {
  const std::string C = std::to_string(c);
  return R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 8, 10, 10] x, float[)" + C + R"(, 8, 3, 3] w1, float[)" + C + R"(] b1, float[)" + C + ", " + C +
         R"(, 1, 1] w2, float[)" + C + R"(] b2, float[1, 1, 10, 10] sp) => (float[1, )" + C + R"(, 1, 1] y) {
  c1 = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(x, w1, b1)
  r1 = Relu(c1)
  c2 = Conv<kernel_shape = [1, 1]>(r1, w2, b2)
  s = Add(c2, )" + (extra_operand.empty() ? "r1" : extra_operand) + R"()
  r2 = Relu(s)
  y = GlobalAveragePool(r2)
})";
}

// r1 is read by MaxPool (a library routine) and by a Conv.
inline std::string library_reader(int c = 8) {
  const std::string C = std::to_string(c);
  return R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, )" + C + R"(, 6, 6] x, float[)" + C + ", " + C + R"(, 3, 3] w, float[)" + C + R"(] b) => (float[1, )" + C +
         R"(, 1, 1] y, float[1, )" + C + R"(, 5, 5] z) {
  c1 = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(x, w, b)
  r1 = Relu(c1)
  z = MaxPool<kernel_shape = [2, 2]>(r1)
  c2 = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(r1, w)
  y = GlobalAveragePool(c2)
})";
}

// Graph outputs written from blocked tensors; y is a Cast of one (a plain
// epilogue stage after a blocked conv) in cast_output.
inline std::string graph_outputs(int c = 8) {
  const std::string C = std::to_string(c), X = "[1, " + C + ", 6, 6]";
  return R"(<ir_version: 8, opset_import: ["" : 17]>
g (float)" + X + R"( x, float[)" + C + ", " + C + R"(, 3, 3] w, float[)" + C + ", " + C + R"(, 1, 1] w1) => (float)" + X +
         R"( y, float)" + X + R"( z) {
  c = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(x, w)
  y = Relu(c)
  d = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(x, w)
  e = Relu(d)
  z = Conv<kernel_shape = [1, 1]>(e, w1)
})";
}

// A blocked conv output with a Cast (no blocked elementwise op) after it.
inline std::string cast_output(int c = 8) {
  const std::string C = std::to_string(c), X = "[1, " + C + ", 6, 6]";
  return R"(<ir_version: 8, opset_import: ["" : 17]>
g (float)" + X + R"( x, float[)" + C + ", " + C + R"(, 3, 3] w, float[)" + C + ", " + C + R"(, 1, 1] w1) => (double)" + X +
         R"( y, float)" + X + R"( z) {
  c = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(x, w)
  y = Cast<to = 11>(c)
  z = Conv<kernel_shape = [1, 1]>(c, w1)
})";
}

// An Inception-style channel concat of two blocked branches (a conv's ReLU
// and a bare conv) and the NCHW input, at batch 2, pooled afterwards.
inline std::string concat_branches(int c = 16) {
  const std::string C = std::to_string(c), T = std::to_string(2 * c + 8);
  return R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 8, 6, 6] x, float[)" + C + R"(, 8, 3, 3] w, float[)" + C + R"(, 8, 1, 1] w1) => (float[2, )" + T +
         R"(, 3, 3] y) {
  c = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(x, w)
  r = Relu(c)
  d = Conv<kernel_shape = [1, 1]>(x, w1)
  cat = Concat<axis = 1>(r, d, x)
  y = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(cat)
})";
}

}  // namespace fuseplan::layout_graphs
