#include "profiling/cuda_run.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "profiling/reference.h"

#ifdef FUSEPLAN_HAVE_CUDA
#include <cuda.h>
#include <dlfcn.h>

#include "emit/cuda/cuda_backend.h"
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

}  // namespace

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
  CudaDeviceStatus st = cuda_device_status();
  if (!st.available) throw Error("no CUDA device: " + st.reason);
  Driver& drv = driver();
  CUdevice dev;
  CUcontext ctx;
  check(drv.DeviceGet(&dev, 0), "cuDeviceGet");
  check(drv.PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(drv.CtxSetCurrent(ctx), "cuCtxSetCurrent");

  DeviceSpec target = d;
  target.arch = "sm_" + std::to_string(st.cc_major) + std::to_string(st.cc_minor);  // compile for the GPU present
  cuda::NvrtcOptions no = cuda::nvrtc_options(target, o.allow_fma);
  std::vector<std::string> cubins;
  std::vector<cuda::CudaGroupSource> srcs;
  auto table = cuda::measure_plan(g, plan, target, no, &cubins, &srcs);

  // One buffer per tensor (sources and every primitive: scratch included).
  std::vector<CUdeviceptr> buf(g.size(), 0);
  for (NodeId n = 0; n < g.size(); ++n) {
    const auto& t = g.node(n).out;
    int64_t bytes = t.known ? t.bytes() : 0;
    if (bytes <= 0) continue;
    check(drv.MemAlloc(&buf[n], static_cast<size_t>(bytes)), "cuMemAlloc");
    auto s = sources.find(n);
    if (s != sources.end()) check(drv.MemcpyHtoD(buf[n], s->second.data.data(), s->second.data.size()), "cuMemcpyHtoD");
  }
  struct Launch {
    CUfunction f;
    unsigned grid, block;
    std::vector<CUdeviceptr*> args;
  };
  std::vector<Launch> launches;
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    CUmodule mod;
    check(drv.ModuleLoadData(&mod, cubins[i].data()), "cuModuleLoadData");
    for (const auto& l : srcs[i].launches) {
      Launch x;
      check(drv.ModuleGetFunction(&x.f, mod, l.kernel.c_str()), "cuModuleGetFunction");
      x.grid = static_cast<unsigned>(std::max<int64_t>(l.grid, 1));
      x.block = static_cast<unsigned>(l.block);
      for (NodeId p : l.params) x.args.push_back(&buf[p]);
      launches.push_back(std::move(x));
    }
  }
  auto run_once = [&] {
    for (auto& l : launches) {
      std::vector<void*> args(l.args.begin(), l.args.end());
      check(drv.LaunchKernel(l.f, l.grid, 1, 1, l.block, 1, 1, 0, nullptr, args.data(), nullptr), "cuLaunchKernel");
    }
  };
  for (int i = 0; i < o.warmup; ++i) run_once();
  check(drv.CtxSynchronize(), "cuCtxSynchronize");
  CUevent e0, e1;
  check(drv.EventCreate(&e0, 0), "cuEventCreate");
  check(drv.EventCreate(&e1, 0), "cuEventCreate");
  std::vector<double> us;
  for (int i = 0; i < std::max(o.repeat, 1); ++i) {
    check(drv.EventRecord(e0, nullptr), "cuEventRecord");
    run_once();
    check(drv.EventRecord(e1, nullptr), "cuEventRecord");
    check(drv.EventSynchronize(e1), "cuEventSynchronize");
    float ms = 0;
    check(drv.EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
    us.push_back(ms * 1000.0);
  }
  std::sort(us.begin(), us.end());
  CudaRunResult r;
  r.median_us = us[us.size() / 2];
  r.launches = static_cast<int64_t>(launches.size());
  auto ref = run_reference(g, sources);
  for (NodeId n : g.graph_outputs()) {
    Tensor t(g.node(n).out.dtype, g.node(n).out.shape);
    if (!t.data.empty()) check(drv.MemcpyDtoH(t.data.data(), buf[n], t.data.size()), "cuMemcpyDtoH");
    r.max_rel_error = std::max(r.max_rel_error, max_relative_error(t, ref.at(n)));
    r.outputs[g.node(n).name] = std::move(t);
  }
  for (CUdeviceptr p : buf)
    if (p) drv.MemFree(p);
  return r;
}

#endif

}  // namespace fuseplan
