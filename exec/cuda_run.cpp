#include "exec/cuda_run.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "exec/reference.h"

#ifdef FUSEPLAN_HAVE_CUDA
#include <cublasLt.h>
#include <cuda.h>
#include <dlfcn.h>

#include <functional>

#include "emit/cuda/cuda_backend.h"
#include "exec/cudnn_conv.h"
#endif

namespace fuseplan {

double max_relative_error(const Tensor& a, const Tensor& ref) {
  if (a.shape != ref.shape || a.dtype != ref.dtype) return std::numeric_limits<double>::infinity();
  bool fl = a.dtype == DType::f32 || a.dtype == DType::f64;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), r = ref.get(i);
    if (std::isnan(x) && std::isnan(r)) continue;
    if (!fl) {
      if (x != r) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (x == r) continue;
    worst = std::max(worst, std::fabs(x - r) / std::max(std::fabs(r), 1e-6));
  }
  return worst;
}

#ifndef FUSEPLAN_HAVE_CUDA

CudaDeviceStatus cuda_device_status() { return {false, "built without the CUDA toolkit", "", 0, 0}; }

CudaRunResult run_plan_cuda(const Graph&, const Plan&, const DeviceSpec&, const std::map<NodeId, Tensor>&,
                            const CudaRunOptions&) {
  throw Error("fuseplan was built without the CUDA toolkit: cannot run on a GPU");
}

double cuda_copy_bandwidth_GBps(int64_t, int) {
  throw Error("fuseplan was built without the CUDA toolkit: cannot run on a GPU");
}

bool cublaslt_available(std::string* reason) {
  if (reason) *reason = "built without the CUDA toolkit";
  return false;
}

#else

namespace {

// The driver entry points used, resolved with dlsym (versioned names as
// exported by libcuda for the _v2 ABI).
struct Driver {
  void* lib = nullptr;
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*CtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*CtxSynchronize)() = nullptr;
  CUresult (*ModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*MemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*ModuleUnload)(CUmodule) = nullptr;
  CUresult (*EventDestroy)(CUevent) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void**, void**) = nullptr;
  CUresult (*EventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*EventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*EventSynchronize)(CUevent) = nullptr;
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  std::string error;
};

template <class F> bool sym(Driver& d, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(d.lib, name));
  if (!f && d.error.empty()) d.error = std::string("libcuda.so.1 lacks ") + name;
  return f != nullptr;
}

Driver& driver() {
  static Driver d = [] {
    Driver x;
    x.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!x.lib) {
      x.error = "libcuda.so.1 not found (no NVIDIA driver)";
      return x;
    }
    sym(x, x.Init, "cuInit");
    sym(x, x.DeviceGetCount, "cuDeviceGetCount");
    sym(x, x.DeviceGet, "cuDeviceGet");
    sym(x, x.DeviceGetName, "cuDeviceGetName");
    sym(x, x.DeviceGetAttribute, "cuDeviceGetAttribute");
    sym(x, x.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    sym(x, x.CtxSetCurrent, "cuCtxSetCurrent");
    sym(x, x.CtxSynchronize, "cuCtxSynchronize");
    sym(x, x.ModuleLoadData, "cuModuleLoadData");
    sym(x, x.ModuleGetFunction, "cuModuleGetFunction");
    sym(x, x.MemAlloc, "cuMemAlloc_v2");
    sym(x, x.MemFree, "cuMemFree_v2");
    sym(x, x.MemcpyHtoD, "cuMemcpyHtoD_v2");
    sym(x, x.MemcpyDtoH, "cuMemcpyDtoH_v2");
    sym(x, x.MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    sym(x, x.ModuleUnload, "cuModuleUnload");
    sym(x, x.EventDestroy, "cuEventDestroy_v2");
    sym(x, x.LaunchKernel, "cuLaunchKernel");
    sym(x, x.EventCreate, "cuEventCreate");
    sym(x, x.EventRecord, "cuEventRecord");
    sym(x, x.EventSynchronize, "cuEventSynchronize");
    sym(x, x.EventElapsedTime, "cuEventElapsedTime");
    sym(x, x.GetErrorString, "cuGetErrorString");
    return x;
  }();
  return d;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* s = nullptr;
  if (driver().GetErrorString) driver().GetErrorString(r, &s);
  throw Error(std::string("CUDA driver call ") + what + " failed: " + (s ? s : std::to_string(r)));
}

// cuBLASLt, loaded at run time like the driver (nothing links it).
struct Lt {
  void* lib = nullptr;
  decltype(&cublasLtCreate) Create = nullptr;
  decltype(&cublasLtMatmulDescCreate) DescCreate = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) DescSet = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) LayoutCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) PrefCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) PrefSet = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) Heuristic = nullptr;
  decltype(&cublasLtMatmul) Matmul = nullptr;
  cublasLtHandle_t handle = nullptr;
  std::string error;
};

template <class F> void lt_sym(Lt& l, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(l.lib, name));
  if (!f && l.error.empty()) l.error = std::string("libcublasLt lacks ") + name;
}

Lt& cublaslt() {
  static Lt l = [] {
    Lt x;
    for (const char* so : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
      if ((x.lib = dlopen(so, RTLD_NOW | RTLD_LOCAL))) break;
    if (!x.lib) {
      x.error = "libcublasLt.so not found (CUDA toolkit libraries not on the loader path)";
      return x;
    }
    lt_sym(x, x.Create, "cublasLtCreate");
    lt_sym(x, x.DescCreate, "cublasLtMatmulDescCreate");
    lt_sym(x, x.DescSet, "cublasLtMatmulDescSetAttribute");
    lt_sym(x, x.LayoutCreate, "cublasLtMatrixLayoutCreate");
    lt_sym(x, x.PrefCreate, "cublasLtMatmulPreferenceCreate");
    lt_sym(x, x.PrefSet, "cublasLtMatmulPreferenceSetAttribute");
    lt_sym(x, x.Heuristic, "cublasLtMatmulAlgoGetHeuristic");
    lt_sym(x, x.Matmul, "cublasLtMatmul");
    return x;
  }();
  return l;
}

void lt_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cuBLASLt ") + what + " failed (status " + std::to_string(s) + ")");
}

// out[M,N] = epilogue(a[M,K] x b[K,N] (+ bias[N])), row-major f32, as the
// column-major product out^T = b^T a^T (cuBLASLt's bias runs along the rows
// of its D = out^T, i.e. along N). Returns the call to enqueue.
std::function<void()> cublaslt_call(const cuda::LibraryMatch& m, const std::vector<CUdeviceptr>& buf,
                                    CUdeviceptr workspace, std::size_t ws_bytes) {
  Lt& lt = cublaslt();
  if (!lt.error.empty()) throw Error(lt.error);
  if (!lt.handle) lt_check(lt.Create(&lt.handle), "cublasLtCreate");
  cublasLtMatmulDesc_t desc;
  lt_check(lt.DescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (m.epilogue == "BIAS") epi = CUBLASLT_EPILOGUE_BIAS;
  else if (m.epilogue == "RELU_BIAS") epi = CUBLASLT_EPILOGUE_RELU_BIAS;
  else if (m.epilogue == "RELU") epi = CUBLASLT_EPILOGUE_RELU;
  else if (m.epilogue == "GELU_BIAS") epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  else if (m.epilogue == "GELU") epi = CUBLASLT_EPILOGUE_GELU;
  lt_check(lt.DescSet(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "set epilogue");
  if (m.bias != kNoNode) {
    const void* bias = reinterpret_cast<const void*>(buf[m.bias]);
    lt_check(lt.DescSet(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "set bias pointer");
  }
  cublasLtMatrixLayout_t la, lb, ld;
  const auto M = static_cast<uint64_t>(m.M), N = static_cast<uint64_t>(m.N), K = static_cast<uint64_t>(m.K);
  if (m.trans_b) {  // b is [N,K] row-major = column-major K x N: cuBLASLt's A operand transposed
    const cublasOperation_t t = CUBLAS_OP_T;
    lt_check(lt.DescSet(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "set transa");
    lt_check(lt.LayoutCreate(&la, CUDA_R_32F, K, N, m.K), "layout b");
  } else {
    lt_check(lt.LayoutCreate(&la, CUDA_R_32F, N, K, m.N), "layout b^T");
  }
  lt_check(lt.LayoutCreate(&lb, CUDA_R_32F, K, M, m.K), "layout a^T");
  lt_check(lt.LayoutCreate(&ld, CUDA_R_32F, N, M, m.N), "layout out^T");
  cublasLtMatmulPreference_t pref;
  lt_check(lt.PrefCreate(&pref), "cublasLtMatmulPreferenceCreate");
  lt_check(lt.PrefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes), "set workspace");
  // Determinism: no split-K reduction schemes (their partial sums may be
  // combined in any order); the first heuristic algorithm for this exact
  // problem, so a fused and an unfused plan run the same kernel.
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE;
  lt_check(lt.PrefSet(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes),
           "set reduction schemes");
  cublasLtMatmulHeuristicResult_t h{};
  int found = 0;
  lt_check(lt.Heuristic(lt.handle, desc, la, lb, ld, ld, pref, 1, &h, &found), "cublasLtMatmulAlgoGetHeuristic");
  if (found < 1) throw Error("cuBLASLt has no algorithm for a " + std::to_string(m.M) + "x" + std::to_string(m.N) +
                             "x" + std::to_string(m.K) + " " + m.epilogue + " matmul");
  const void* A = reinterpret_cast<const void*>(buf[m.b]);
  const void* B = reinterpret_cast<const void*>(buf[m.a]);
  void* D = reinterpret_cast<void*>(buf[m.out]);
  void* ws = reinterpret_cast<void*>(workspace);
  auto algo = h.algo;
  return [&lt, desc, la, lb, ld, A, B, D, ws, ws_bytes, algo] {
    const float alpha = 1.0f, beta = 0.0f;
    lt_check(lt.Matmul(lt.handle, desc, &alpha, A, la, B, lb, &beta, D, ld, D, ld, &algo, ws, ws_bytes, nullptr),
             "cublasLtMatmul");
  };
}

// Frees what a run allocated, also when a driver call throws midway.
struct Resources {
  std::vector<CUdeviceptr> bufs;
  std::vector<CUdeviceptr> extra;  // workspaces (bufs' addresses are handed out, so it never grows)
  std::vector<CUmodule> mods;
  std::vector<CUevent> events;
  ~Resources() {
    Driver& d = driver();
    for (CUevent e : events)
      if (e && d.EventDestroy) d.EventDestroy(e);
    for (CUmodule m : mods)
      if (m && d.ModuleUnload) d.ModuleUnload(m);
    for (CUdeviceptr p : bufs)
      if (p) d.MemFree(p);
    for (CUdeviceptr p : extra)
      if (p) d.MemFree(p);
  }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void make_current() {
  Driver& drv = driver();
  CUdevice dev;
  CUcontext ctx;
  check(drv.DeviceGet(&dev, 0), "cuDeviceGet");
  check(drv.PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(drv.CtxSetCurrent(ctx), "cuCtxSetCurrent");
}

}  // namespace

bool cublaslt_available(std::string* reason) {
  Lt& lt = cublaslt();
  if (reason) *reason = lt.error;
  return lt.error.empty();
}

double cuda_copy_bandwidth_GBps(int64_t bytes, int repeat) {
  CudaDeviceStatus st = cuda_device_status();
  if (!st.available) throw Error("no CUDA device: " + st.reason);
  Driver& drv = driver();
  make_current();
  Resources res;
  res.bufs.assign(2, 0);
  check(drv.MemAlloc(&res.bufs[0], static_cast<size_t>(bytes)), "cuMemAlloc");
  check(drv.MemAlloc(&res.bufs[1], static_cast<size_t>(bytes)), "cuMemAlloc");
  res.events.assign(2, nullptr);
  check(drv.EventCreate(&res.events[0], 0), "cuEventCreate");
  check(drv.EventCreate(&res.events[1], 0), "cuEventCreate");
  check(drv.MemcpyDtoDAsync(res.bufs[1], res.bufs[0], static_cast<size_t>(bytes), nullptr), "cuMemcpyDtoD");
  check(drv.CtxSynchronize(), "cuCtxSynchronize");
  std::vector<double> gbps;
  for (int i = 0; i < std::max(repeat, 1); ++i) {
    check(drv.EventRecord(res.events[0], nullptr), "cuEventRecord");
    check(drv.MemcpyDtoDAsync(res.bufs[1], res.bufs[0], static_cast<size_t>(bytes), nullptr), "cuMemcpyDtoD");
    check(drv.EventRecord(res.events[1], nullptr), "cuEventRecord");
    check(drv.EventSynchronize(res.events[1]), "cuEventSynchronize");
    float ms = 0;
    check(drv.EventElapsedTime(&ms, res.events[0], res.events[1]), "cuEventElapsedTime");
    if (ms > 0) gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  return median(gbps);
}

CudaDeviceStatus cuda_device_status() {
  CudaDeviceStatus st;
  Driver& d = driver();
  if (!d.error.empty()) {
    st.reason = d.error;
    return st;
  }
  if (CUresult r = d.Init(0); r != CUDA_SUCCESS) {
    st.reason = "cuInit failed (error " + std::to_string(r) + ")";
    return st;
  }
  int n = 0;
  if (d.DeviceGetCount(&n) != CUDA_SUCCESS || n == 0) {
    st.reason = "cuDeviceGetCount found no device";
    return st;
  }
  CUdevice dev;
  char name[256] = {0};
  d.DeviceGet(&dev, 0);
  d.DeviceGetName(name, sizeof name, dev);
  d.DeviceGetAttribute(&st.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.DeviceGetAttribute(&st.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  st.name = name;
  st.available = true;
  return st;
}

CudaRunResult run_plan_cuda(const Graph& g, const Plan& plan, const DeviceSpec& d,
                            const std::map<NodeId, Tensor>& sources, const CudaRunOptions& o) {
  // Opaque groups have no kernel (cuda::measure_plan skips them): refuse, as the CPU runner does.
  for (NodeId n = 0; n < g.size(); ++n)
    if (g.node(n).op_class == OpClass::opaque)
      throw Error("cannot execute opaque primitive '" + g.node(n).name + "' (op " + g.node(n).op + ")");
  CudaDeviceStatus st = cuda_device_status();
  if (!st.available) throw Error("no CUDA device: " + st.reason);
  Driver& drv = driver();
  make_current();

  DeviceSpec target = d;
  target.arch = "sm_" + std::to_string(st.cc_major) + std::to_string(st.cc_minor);  // compile for the GPU present
  cuda::NvrtcOptions no = cuda::nvrtc_options(target, o.allow_fma);
  std::vector<std::string> cubins;
  std::vector<cuda::CudaGroupSource> srcs;
  // Canonical sources: one module per group, so identical groups of other
  // plans (strategies) hit the NVRTC cache.
  auto table = cuda::measure_plan(g, plan, target, no, &cubins, &srcs, /*canonical=*/true, o.library);
  // Only the libraries some group calls must load.
  for (const auto& t : table) {
    std::string why;
    if (t.lowering.route == cuda::GroupLowering::Route::cublaslt && !cublaslt_available(&why))
      throw Error("cuBLASLt unavailable: " + why + " (CudaRunOptions::library = LibraryOptions::none() emits every GEMM)");
    if (t.lowering.route == cuda::GroupLowering::Route::cudnn && !cudnn_available(&why))
      throw Error("cuDNN unavailable: " + why + " (CudaRunOptions::library = LibraryOptions::none() emits every conv)");
  }

  // One buffer per tensor (sources and every primitive: scratch included).
  Resources res;
  res.bufs.assign(g.size(), 0);
  std::vector<CUdeviceptr>& buf = res.bufs;
  for (NodeId n = 0; n < g.size(); ++n) {
    const auto& t = g.node(n).out;
    int64_t bytes = t.known ? t.bytes() : 0;
    if (bytes <= 0) continue;
    check(drv.MemAlloc(&buf[n], static_cast<size_t>(bytes)), "cuMemAlloc");
    auto s = sources.find(n);
    if (s != sources.end()) check(drv.MemcpyHtoD(buf[n], s->second.data.data(), s->second.data.size()), "cuMemcpyHtoD");
  }
  struct Launch {
    CUfunction f = nullptr;
    unsigned grid = 1, block = 1;
    std::vector<CUdeviceptr*> args;
    std::function<void()> library;  // cuBLASLt call instead of a kernel
  };
  std::vector<Launch> launches;
  std::vector<std::pair<std::size_t, std::size_t>> group_range;  // launches of each group
  CudaRunResult r;
  constexpr std::size_t kLtWorkspace = std::size_t{32} << 20;
  CUdeviceptr lt_ws = 0;
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    // Emitted groups: their kernels. Library groups (emit/cuda/lowering.h):
    // prologue kernels, the cuBLASLt / cuDNN call (at library_slot), then
    // the epilogue kernels.
    const cuda::GroupLowering& lw = table[i].lowering;
    const std::size_t first = launches.size();
    CUmodule mod = nullptr;
    if (!srcs[i].launches.empty()) {
      check(drv.ModuleLoadData(&mod, cubins[i].data()), "cuModuleLoadData");
      res.mods.push_back(mod);
    }
    const std::size_t nk = srcs[i].launches.size();
    const std::size_t slot = lw.library() ? static_cast<std::size_t>(std::max(srcs[i].library_slot, 0)) : nk + 1;
    for (std::size_t k = 0; k <= nk; ++k) {
      if (k == slot) {
        if (!lt_ws) {
          check(drv.MemAlloc(&lt_ws, kLtWorkspace), "cuMemAlloc");
          res.extra.push_back(lt_ws);
        }
        Launch x;
        if (lw.route == cuda::GroupLowering::Route::cublaslt) {
          x.library = cublaslt_call(lw.gemm, buf, lt_ws, kLtWorkspace);
        } else {
          const auto& c = lw.conv;
          x.library = cudnn_conv_call(c, buf[c.x], buf[c.w], buf[c.out], lt_ws, kLtWorkspace);
        }
        launches.push_back(std::move(x));
        ++r.library_calls;
      }
      if (k == nk) break;
      const auto& l = srcs[i].launches[k];
      Launch x;
      check(drv.ModuleGetFunction(&x.f, mod, l.kernel.c_str()), "cuModuleGetFunction");
      x.grid = static_cast<unsigned>(std::max<int64_t>(l.grid, 1));
      x.block = static_cast<unsigned>(l.block);
      for (NodeId p : l.params) x.args.push_back(&buf[p]);
      launches.push_back(std::move(x));
    }
    group_range.emplace_back(first, launches.size());
  }
  auto run_range = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      Launch& l = launches[i];
      if (l.library) {
        l.library();
        continue;
      }
      std::vector<void*> args(l.args.begin(), l.args.end());
      check(drv.LaunchKernel(l.f, l.grid, 1, 1, l.block, 1, 1, 0, nullptr, args.data(), nullptr), "cuLaunchKernel");
    }
  };
  for (int i = 0; i < o.warmup; ++i) run_range(0, launches.size());
  check(drv.CtxSynchronize(), "cuCtxSynchronize");
  res.events.assign(2, nullptr);
  CUevent& e0 = res.events[0];
  CUevent& e1 = res.events[1];
  check(drv.EventCreate(&e0, 0), "cuEventCreate");
  check(drv.EventCreate(&e1, 0), "cuEventCreate");
  auto time_us = [&](std::size_t lo, std::size_t hi) {
    std::vector<double> us;
    for (int i = 0; i < std::max(o.repeat, 1); ++i) {
      check(drv.EventRecord(e0, nullptr), "cuEventRecord");
      run_range(lo, hi);
      check(drv.EventRecord(e1, nullptr), "cuEventRecord");
      check(drv.EventSynchronize(e1), "cuEventSynchronize");
      float ms = 0;
      check(drv.EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
      us.push_back(ms * 1000.0);
    }
    return median(std::move(us));
  };
  r.median_us = time_us(0, launches.size());
  r.launches = static_cast<int64_t>(launches.size());
  if (o.time_groups)
    for (auto [lo, hi] : group_range) r.group_median_us.push_back(time_us(lo, hi));
  std::vector<Tensor> ref;
  if (o.verify) ref = run_reference(g, sources);
  for (NodeId n : g.graph_outputs()) {
    Tensor t(g.node(n).out.dtype, g.node(n).out.shape);
    if (!t.data.empty()) check(drv.MemcpyDtoH(t.data.data(), buf[n], t.data.size()), "cuMemcpyDtoH");
    if (o.verify) r.max_rel_error = std::max(r.max_rel_error, max_relative_error(t, ref.at(n)));
    r.outputs[g.node(n).name] = std::move(t);
  }
  return r;
}

#endif

}  // namespace fuseplan
