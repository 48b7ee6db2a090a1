#include "exec/cudnn_conv.h"

#include "graph/graph.h"

#ifdef FUSEPLAN_HAVE_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn.h>
#include <dlfcn.h>
#endif

namespace fuseplan {

#ifndef FUSEPLAN_HAVE_CUDA

bool cudnn_available(std::string* reason) {
  if (reason) *reason = "built without the CUDA toolkit";
  return false;
}
std::string cudnn_version() { return ""; }
std::vector<int> cudnn_output_dims(const cuda::ConvMatch&) {
  throw Error("fuseplan was built without the CUDA toolkit: no cuDNN");
}
std::function<void()> cudnn_conv_call(const cuda::ConvMatch&, uint64_t, uint64_t, uint64_t, uint64_t, std::size_t) {
  throw Error("fuseplan was built without the CUDA toolkit: no cuDNN");
}

#else

namespace {

struct Dnn {
  void* lib = nullptr;
  decltype(&cudnnGetVersion) GetVersion = nullptr;
  decltype(&cudnnGetErrorString) ErrorString = nullptr;
  decltype(&cudnnCreate) Create = nullptr;
  decltype(&cudnnCreateTensorDescriptor) CreateTensor = nullptr;
  decltype(&cudnnSetTensorNdDescriptorEx) SetTensor = nullptr;
  decltype(&cudnnCreateFilterDescriptor) CreateFilter = nullptr;
  decltype(&cudnnSetFilterNdDescriptor) SetFilter = nullptr;
  decltype(&cudnnCreateConvolutionDescriptor) CreateConv = nullptr;
  decltype(&cudnnSetConvolutionNdDescriptor) SetConv = nullptr;
  decltype(&cudnnSetConvolutionGroupCount) SetGroups = nullptr;
  decltype(&cudnnSetConvolutionMathType) SetMath = nullptr;
  decltype(&cudnnGetConvolutionNdForwardOutputDim) OutputDim = nullptr;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) WorkspaceSize = nullptr;
  decltype(&cudnnConvolutionForward) Forward = nullptr;
  decltype(&cudnnDestroyTensorDescriptor) DestroyTensor = nullptr;
  decltype(&cudnnDestroyFilterDescriptor) DestroyFilter = nullptr;
  decltype(&cudnnDestroyConvolutionDescriptor) DestroyConv = nullptr;
  cudnnHandle_t handle = nullptr;
  std::string error;
};

template <class F> void dnn_sym(Dnn& d, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(d.lib, name));
  if (!f && d.error.empty()) d.error = std::string("libcudnn lacks ") + name;
}

Dnn& dnn() {
  static Dnn d = [] {
    Dnn x;
    for (const char* so : {"libcudnn.so.9", "libcudnn.so"})
      if ((x.lib = dlopen(so, RTLD_NOW | RTLD_LOCAL))) break;
    if (!x.lib) {
      x.error = "libcudnn.so.9 not found (cuDNN not on the loader path)";
      return x;
    }
    dnn_sym(x, x.GetVersion, "cudnnGetVersion");
    dnn_sym(x, x.ErrorString, "cudnnGetErrorString");
    dnn_sym(x, x.Create, "cudnnCreate");
    dnn_sym(x, x.CreateTensor, "cudnnCreateTensorDescriptor");
    dnn_sym(x, x.SetTensor, "cudnnSetTensorNdDescriptorEx");
    dnn_sym(x, x.CreateFilter, "cudnnCreateFilterDescriptor");
    dnn_sym(x, x.SetFilter, "cudnnSetFilterNdDescriptor");
    dnn_sym(x, x.CreateConv, "cudnnCreateConvolutionDescriptor");
    dnn_sym(x, x.SetConv, "cudnnSetConvolutionNdDescriptor");
    dnn_sym(x, x.SetGroups, "cudnnSetConvolutionGroupCount");
    dnn_sym(x, x.SetMath, "cudnnSetConvolutionMathType");
    dnn_sym(x, x.OutputDim, "cudnnGetConvolutionNdForwardOutputDim");
    dnn_sym(x, x.WorkspaceSize, "cudnnGetConvolutionForwardWorkspaceSize");
    dnn_sym(x, x.Forward, "cudnnConvolutionForward");
    dnn_sym(x, x.DestroyTensor, "cudnnDestroyTensorDescriptor");
    dnn_sym(x, x.DestroyFilter, "cudnnDestroyFilterDescriptor");
    dnn_sym(x, x.DestroyConv, "cudnnDestroyConvolutionDescriptor");
    return x;
  }();
  return d;
}

Dnn& loaded() {
  Dnn& d = dnn();
  if (!d.error.empty()) throw Error(d.error);
  return d;
}

void dnn_check(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  const char* msg = dnn().ErrorString ? dnn().ErrorString(s) : nullptr;
  throw Error(std::string("cuDNN ") + what + " failed: " + (msg ? msg : std::to_string(static_cast<int>(s))));
}

// Descriptors of one convolution (kept alive by the call that uses them).
struct ConvDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ConvDescs() = default;
  ConvDescs(const ConvDescs&) = delete;
  ConvDescs& operator=(const ConvDescs&) = delete;
  ~ConvDescs() {
    Dnn& d = dnn();
    if (x) d.DestroyTensor(x);
    if (y) d.DestroyTensor(y);
    if (w) d.DestroyFilter(w);
    if (conv) d.DestroyConv(conv);
  }
};

void build(ConvDescs& c, const cuda::ConvMatch& m, bool with_output) {
  Dnn& d = loaded();
  if (!m.valid()) throw Error("cuDNN: no convolution to describe");
  const int nd = static_cast<int>(m.x_dims.size());
  dnn_check(d.CreateTensor(&c.x), "cudnnCreateTensorDescriptor");
  dnn_check(d.SetTensor(c.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, nd, m.x_dims.data()), "set input descriptor");
  dnn_check(d.CreateFilter(&c.w), "cudnnCreateFilterDescriptor");
  dnn_check(d.SetFilter(c.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, nd, m.w_dims.data()), "set filter descriptor");
  dnn_check(d.CreateConv(&c.conv), "cudnnCreateConvolutionDescriptor");
  dnn_check(d.SetConv(c.conv, nd - 2, m.pads.data(), m.strides.data(), m.dilations.data(), CUDNN_CROSS_CORRELATION,
                      CUDNN_DATA_FLOAT),
            "set convolution descriptor");
  dnn_check(d.SetGroups(c.conv, m.groups), "cudnnSetConvolutionGroupCount");
  dnn_check(d.SetMath(c.conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");  // no TF32
  if (with_output) {
    dnn_check(d.CreateTensor(&c.y), "cudnnCreateTensorDescriptor");
    dnn_check(d.SetTensor(c.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, nd, m.y_dims.data()), "set output descriptor");
  }
}

}  // namespace

bool cudnn_available(std::string* reason) {
  Dnn& d = dnn();
  if (reason) *reason = d.error;
  return d.error.empty();
}

std::string cudnn_version() {
  Dnn& d = dnn();
  if (!d.error.empty()) return "";
  std::size_t v = d.GetVersion();  // major*10000 + minor*100 + patch (cuDNN 9)
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::vector<int> cudnn_output_dims(const cuda::ConvMatch& m) {
  ConvDescs c;
  build(c, m, false);
  std::vector<int> out(m.x_dims.size());
  dnn_check(loaded().OutputDim(c.conv, c.x, c.w, static_cast<int>(out.size()), out.data()),
            "cudnnGetConvolutionNdForwardOutputDim");
  return out;
}

std::function<void()> cudnn_conv_call(const cuda::ConvMatch& m, uint64_t x, uint64_t w, uint64_t y,
                                      uint64_t workspace, std::size_t ws_bytes) {
  Dnn& d = loaded();
  if (!d.handle) dnn_check(d.Create(&d.handle), "cudnnCreate");
  auto c = std::make_shared<ConvDescs>();
  build(*c, m, true);
  if (cudnn_output_dims(m) != m.y_dims) throw Error("cuDNN derives other output dims than the graph's Conv");
  const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::size_t need = 0;
  dnn_check(d.WorkspaceSize(d.handle, c->x, c->w, c->conv, c->y, algo, &need),
            "cudnnGetConvolutionForwardWorkspaceSize (IMPLICIT_GEMM)");
  if (need > ws_bytes)
    throw Error("cuDNN IMPLICIT_GEMM needs " + std::to_string(need) + " bytes of workspace, " +
                std::to_string(ws_bytes) + " available");
  cudnnHandle_t h = d.handle;
  auto X = reinterpret_cast<const void*>(x), W = reinterpret_cast<const void*>(w);
  auto Y = reinterpret_cast<void*>(y), WS = reinterpret_cast<void*>(workspace);
  return [&d, h, c, algo, X, W, Y, WS, need] {
    const float alpha = 1.0f, beta = 0.0f;
    dnn_check(d.Forward(h, &alpha, c->x, X, c->w, W, c->conv, algo, WS, need, &beta, c->y, Y),
              "cudnnConvolutionForward");
  };
}

#endif

}  // namespace fuseplan

#ifdef FUSEPLAN_HAVE_CUDA
#pragma GCC diagnostic pop
#endif
