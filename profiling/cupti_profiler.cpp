#include "profiling/cupti_profiler.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <regex>

#include "exec/cuda_run.h"
#include "exec/tensor_data.h"

#ifdef FUSEPLAN_HAVE_CUDA
#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <dlfcn.h>
#endif

namespace fuseplan {

std::optional<int> group_of_kernel(const std::string& kernel_name) {
  static const std::regex re(R"(fp_g(\d+)_k\d+)");
  std::smatch m;
  if (!std::regex_search(kernel_name, m, re)) return std::nullopt;
  return std::stoi(m[1].str());
}

#ifndef FUSEPLAN_HAVE_CUDA

CuptiStatus cupti_status() { return {false, "built without the CUDA toolkit (no CUPTI)"}; }

ProfileResult CuptiProfiler::profile(const Graph&, const Plan&, const DeviceSpec&, const ProfileOptions&) {
  throw Error("fuseplan was built without the CUDA toolkit: CUPTI profiling is unavailable");
}

#else

namespace {

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}

// ---- Activity API: kernel records, collected by buffer callbacks ----
struct KernelRecord {
  std::string name;
  uint64_t start = 0, end = 0;
  uint32_t correlation = 0;
  int registers = 0;
  uint32_t local_per_thread = 0;
};
std::mutex g_mu;
std::vector<KernelRecord> g_kernels;
constexpr size_t kActivityBufferBytes = 8 << 20;  // 8 MiB per buffer (CUPTI samples use 8-32 MiB)

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = kActivityBufferBytes;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kActivityBufferBytes));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
    g_kernels.push_back({k->name ? k->name : "", k->start, k->end, k->correlationId,
                         static_cast<int>(k->registersPerThread), k->localMemoryPerThread});
  }
  std::free(buffer);
}

// ---- the current context (the runner retains the primary context) ----
CUcontext primary_context(std::string& why) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    why = "libcuda.so.1 not found (no NVIDIA driver)";
    return nullptr;
  }
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(lib, "cuInit"));
  auto get = reinterpret_cast<CUresult (*)(CUdevice*, int)>(dlsym(lib, "cuDeviceGet"));
  auto retain = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
  auto set = reinterpret_cast<CUresult (*)(CUcontext)>(dlsym(lib, "cuCtxSetCurrent"));
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (!init || !get || !retain || !set || init(0) != CUDA_SUCCESS || get(&dev, 0) != CUDA_SUCCESS ||
      retain(&ctx, dev) != CUDA_SUCCESS || set(ctx) != CUDA_SUCCESS) {
    why = "cannot create a CUDA context on device 0";
    return nullptr;
  }
  return ctx;
}

// ---- Range Profiler: per-kernel metrics (auto range, kernel replay) ----
// Returns per-range (kernel name, metric values); sets `note` on failure.
std::vector<std::pair<std::string, std::vector<double>>> range_metrics(const std::function<void()>& run, CUcontext ctx,
                                                                       std::string& note) {
  std::vector<std::pair<std::string, std::vector<double>>> out;
  const auto& names = cupti_metric_names();
  std::vector<const char*> cnames;
  for (const auto& n : names) cnames.push_back(n.c_str());
  auto fail = [&](const char* step, CUptiResult r) {
    note = r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
               ? std::string("GPU performance counters need privileges (ERR_NVGPUCTRPERM: run as root or load the "
                             "driver with NVreg_RestrictProfilingToAdminUsers=0); kernel times come from the Activity API only")
               : std::string("CUPTI range profiler unavailable: ") + step + ": " + cupti_error(r);
    return out;
  };
  CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  if (auto r = cuptiProfilerInitialize(&pi); r != CUPTI_SUCCESS) return fail("cuptiProfilerInitialize", r);
  CUpti_Device_GetChipName_Params chip = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = 0;
  if (auto r = cuptiDeviceGetChipName(&chip); r != CUPTI_SUCCESS) return fail("cuptiDeviceGetChipName", r);
  CUpti_Profiler_GetCounterAvailability_Params av = {CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  av.ctx = ctx;
  if (auto r = cuptiProfilerGetCounterAvailability(&av); r != CUPTI_SUCCESS)
    return fail("cuptiProfilerGetCounterAvailability", r);
  std::vector<uint8_t> avail(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = avail.data();
  if (auto r = cuptiProfilerGetCounterAvailability(&av); r != CUPTI_SUCCESS)
    return fail("cuptiProfilerGetCounterAvailability", r);

  CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hi.pChipName = chip.pChipName;
  hi.pCounterAvailabilityImage = avail.data();
  if (auto r = cuptiProfilerHostInitialize(&hi); r != CUPTI_SUCCESS) return fail("cuptiProfilerHostInitialize", r);
  CUpti_Profiler_Host_Object* host = hi.pHostObject;
  struct HostGuard {
    CUpti_Profiler_Host_Object* h;
    ~HostGuard() {
      CUpti_Profiler_Host_Deinitialize_Params p = {CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
      p.pHostObject = h;
      cuptiProfilerHostDeinitialize(&p);
    }
  } host_guard{host};
  CUpti_Profiler_Host_ConfigAddMetrics_Params am = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  am.pHostObject = host;
  am.ppMetricNames = cnames.data();
  am.numMetrics = cnames.size();
  if (auto r = cuptiProfilerHostConfigAddMetrics(&am); r != CUPTI_SUCCESS) return fail("ConfigAddMetrics", r);
  CUpti_Profiler_Host_GetConfigImageSize_Params cs = {CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  cs.pHostObject = host;
  if (auto r = cuptiProfilerHostGetConfigImageSize(&cs); r != CUPTI_SUCCESS) return fail("GetConfigImageSize", r);
  std::vector<uint8_t> config(cs.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params ci = {CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  ci.pHostObject = host;
  ci.configImageSize = config.size();
  ci.pConfigImage = config.data();
  if (auto r = cuptiProfilerHostGetConfigImage(&ci); r != CUPTI_SUCCESS) return fail("GetConfigImage", r);

  CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  en.ctx = ctx;
  if (auto r = cuptiRangeProfilerEnable(&en); r != CUPTI_SUCCESS) return fail("cuptiRangeProfilerEnable", r);
  CUpti_RangeProfiler_Object* obj = en.pRangeProfilerObject;
  struct EnableGuard {
    CUpti_RangeProfiler_Object* o;
    ~EnableGuard() {
      CUpti_RangeProfiler_Disable_Params p = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
      p.pRangeProfilerObject = o;
      cuptiRangeProfilerDisable(&p);
    }
  } enable_guard{obj};
  constexpr size_t kMaxRanges = 4096;  // kernels of one plan run (a model has < 1000 groups)
  CUpti_RangeProfiler_GetCounterDataSize_Params ds = {CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pRangeProfilerObject = obj;
  ds.pMetricNames = cnames.data();
  ds.numMetrics = cnames.size();
  ds.maxNumOfRanges = kMaxRanges;
  ds.maxNumRangeTreeNodes = kMaxRanges;
  if (auto r = cuptiRangeProfilerGetCounterDataSize(&ds); r != CUPTI_SUCCESS) return fail("GetCounterDataSize", r);
  std::vector<uint8_t> data(ds.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  di.pRangeProfilerObject = obj;
  di.counterDataSize = data.size();
  di.pCounterData = data.data();
  if (auto r = cuptiRangeProfilerCounterDataImageInitialize(&di); r != CUPTI_SUCCESS)
    return fail("CounterDataImageInitialize", r);
  CUpti_RangeProfiler_SetConfig_Params sc = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  sc.pRangeProfilerObject = obj;
  sc.configSize = config.size();
  sc.pConfig = config.data();
  sc.counterDataImageSize = data.size();
  sc.pCounterDataImage = data.data();
  sc.range = CUPTI_AutoRange;
  sc.replayMode = CUPTI_KernelReplay;
  sc.maxRangesPerPass = kMaxRanges;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  if (auto r = cuptiRangeProfilerSetConfig(&sc); r != CUPTI_SUCCESS) return fail("cuptiRangeProfilerSetConfig", r);
  CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  st.pRangeProfilerObject = obj;
  if (auto r = cuptiRangeProfilerStart(&st); r != CUPTI_SUCCESS) return fail("cuptiRangeProfilerStart", r);
  run();
  CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  sp.pRangeProfilerObject = obj;
  if (auto r = cuptiRangeProfilerStop(&sp); r != CUPTI_SUCCESS) return fail("cuptiRangeProfilerStop", r);
  CUpti_RangeProfiler_DecodeData_Params dd = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  dd.pRangeProfilerObject = obj;
  if (auto r = cuptiRangeProfilerDecodeData(&dd); r != CUPTI_SUCCESS) return fail("cuptiRangeProfilerDecodeData", r);

  CUpti_RangeProfiler_GetCounterDataInfo_Params info = {CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = data.data();
  info.counterDataImageSize = data.size();
  if (auto r = cuptiRangeProfilerGetCounterDataInfo(&info); r != CUPTI_SUCCESS) return fail("GetCounterDataInfo", r);
  for (size_t i = 0; i < info.numTotalRanges; ++i) {
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
    ri.pCounterDataImage = data.data();
    ri.counterDataImageSize = data.size();
    ri.rangeIndex = i;
    ri.rangeDelimiter = "/";
    if (cuptiRangeProfilerCounterDataGetRangeInfo(&ri) != CUPTI_SUCCESS) continue;
    std::vector<double> values(cnames.size(), -1);
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = host;
    ev.pCounterDataImage = data.data();
    ev.counterDataImageSize = data.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = cnames.data();
    ev.numMetrics = cnames.size();
    ev.pMetricValues = values.data();
    if (cuptiProfilerHostEvaluateToGpuValues(&ev) != CUPTI_SUCCESS) continue;
    out.emplace_back(ri.rangeName ? ri.rangeName : "", std::move(values));
  }
  return out;
}

}  // namespace

CuptiStatus cupti_status() {
  CudaDeviceStatus s = cuda_device_status();
  if (!s.available) return {false, "no CUDA device: " + s.reason};
  return {true, ""};
}

ProfileResult CuptiProfiler::profile(const Graph& g, const Plan& plan, const DeviceSpec& d, const ProfileOptions& o) {
  CuptiStatus status = cupti_status();
  if (!status.available) throw Error("CUPTI profiling needs a GPU: " + status.reason);
  ProfileResult res;
  std::map<NodeId, Tensor> sources = make_source_data(g);
  CudaRunOptions ro;
  ro.warmup = std::max(o.warmup, 0);
  ro.repeat = std::max(o.repeat, 1);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_kernels.clear();
  }
  if (auto r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS)
    throw Error("cuptiActivityRegisterCallbacks: " + cupti_error(r));
  if (auto r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS)
    throw Error("cuptiActivityEnable(CONCURRENT_KERNEL): " + cupti_error(r));
  run_plan_cuda(g, plan, d, sources, ro);
  cuptiActivityFlushAll(1);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);

  // Per group: the kernels of each run in launch order; a repetition's time
  // is the sum of its launches (warm-up runs dropped).
  std::map<int, std::vector<KernelRecord>> by_group;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    std::sort(g_kernels.begin(), g_kernels.end(), [](auto& a, auto& b) { return a.start < b.start; });
    for (const auto& k : g_kernels)
      if (auto grp = group_of_kernel(k.name)) by_group[*grp].push_back(k);
  }
  const int runs = ro.warmup + ro.repeat;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    const auto& ks = by_group[static_cast<int>(i)];
    std::vector<double> samples;
    const std::size_t per_run = ks.size() / std::max(runs, 1);
    GroupMeasurement m;
    if (per_run > 0) {
      for (int r = ro.warmup; r < runs; ++r) {
        double us = 0;
        for (std::size_t k = 0; k < per_run; ++k) us += (ks[r * per_run + k].end - ks[r * per_run + k].start) * 1e-3;
        samples.push_back(us);
      }
      m = summarise(samples);
      int regs = 0;
      uint32_t local = 0;
      for (std::size_t k = 0; k < per_run; ++k) regs = std::max(regs, ks[k].registers), local = std::max(local, ks[k].local_per_thread);
      m.registers_per_thread = regs;
      m.local_bytes_per_thread = local;
    }
    m.group = static_cast<int>(i);
    res.total_us += m.median_us;
    res.groups.push_back(m);
  }

  if (o.counters) {
    std::string why, note;
    CUcontext ctx = primary_context(why);
    if (!ctx) {
      res.notes.push_back("CUPTI range profiler skipped: " + why);
    } else {
      CudaRunOptions once;
      once.warmup = 0;
      once.repeat = 1;
      auto ranges = range_metrics([&] { run_plan_cuda(g, plan, d, sources, once); }, ctx, note);
      if (!note.empty()) res.notes.push_back(note);
      for (const auto& [name, v] : ranges) {
        auto grp = group_of_kernel(name);
        if (!grp || *grp < 0 || static_cast<std::size_t>(*grp) >= res.groups.size()) continue;
        GroupMeasurement& m = res.groups[*grp];
        auto acc = [](double& field, double x) { field = (field < 0 ? 0 : field) + x; };
        acc(m.measured_bytes_read, v[0]);
        acc(m.measured_bytes_written, v[1]);
        m.warps_active_pct = std::max(m.warps_active_pct, v[2]);
        acc(m.local_bytes, v[3] + v[4]);
      }
    }
  }
  return res;
}

#endif

}  // namespace fuseplan
