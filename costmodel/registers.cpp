// Register-pressure estimate of a fusion group, its spill traffic and the
// occupancy it allows. GPU: 32-bit registers per thread; CPU: AVX2 vector
// registers. Formulas and provenance: costmodel/README.md ("Registers").
#include <algorithm>
#include <cmath>

#include "costmodel/cost_detail.h"

namespace fuseplan::costmodel_detail {

namespace {

// --- GPU ---
// Address/index registers of a grid-stride kernel: 64-bit base pointers,
// thread/block index, bound and stride. Estimate: `ptxas -v` on simple
// elementwise kernels reports 8–16 registers in total.
constexpr int kGpuAddressRegs = 10;
// Reduction kernels: per reduction, accumulator + shuffle temporary; once,
// lane and warp index (warp-shuffle tree reduction, CUDA samples `reduction`).
constexpr int kGpuRegsPerReduction = 2;
constexpr int kGpuReductionIndexRegs = 2;
// Multipass: a row stays in registers while row_len / threads_per_block ≤ this
// many registers per thread (estimate: leaves room for temporaries under 255
// while keeping two blocks per SM), else it is staged in shared memory.
constexpr int kGpuRowRegsLimit = 128;
// Contraction operand fragments: double-buffered A (16) + B (8) mma.sync
// m16n8k16 fragments of a 64×32 warp tile (estimate from the PTX ISA fragment
// layouts).
constexpr int kGpuOperandFragmentRegs = 24;
// Registers are allocated per warp in units of 256 (8 per thread): CUDA
// Occupancy Calculator, "register allocation unit size" for cc ≥ 5.0.
constexpr int kGpuRegAllocUnit = 8;
constexpr double kBytesPerReg = 4;  // 32-bit registers

// --- CPU (AVX2) ---
constexpr double kCpuVectorBytes = 32;  // one ymm register (Intel SDM vol. 1, 14.1)
constexpr int kCpuRegsPerReduction = 1;  // vector accumulator

// Peak number of registers live when the positions `subset` (ascending) of
// the view are evaluated in order. A value occupies `width` registers from
// its definition (external inputs: from their first load) to its last use
// in the subset; a value nobody in the subset reads dies after its store.
int peak_live(const GroupView& v, const std::vector<int>& subset, double elems, double reg_bytes) {
  const Graph& g = v.g;
  auto width = [&](NodeId n) {
    double b = static_cast<double>(dtype_bytes(g.node(n).out.dtype));
    return std::max(1, static_cast<int>(std::ceil(elems * b / reg_bytes)));
  };
  // Per-thread scratch (the search prices hundreds of thousands of groups).
  struct External {
    NodeId node;
    int last_use;
    bool loaded;
    int width;
  };
  struct Read {  // one operand edge of a subset node, resolved once
    int pos;     // position in the view (in the subset), or -1
    int ext;     // index in ext when pos < 0
  };
  thread_local std::vector<char> in_subset;
  thread_local std::vector<int> last_use, pos_width;
  thread_local std::vector<External> ext;    // values read from outside the subset
  thread_local std::vector<int> ext_index;   // NodeId -> index in ext, -1: none (reset below)
  thread_local std::vector<Read> reads;      // operand edges of subset[0], subset[1], ... in edge order
  thread_local std::vector<int> reads_begin; // subset index -> first entry in reads (+ one end entry)
  if (ext_index.size() < g.size()) ext_index.resize(g.size(), -1);
  in_subset.assign(v.order.size(), 0);
  for (int p : subset) in_subset[p] = 1;
  // Last use (position) of every in-group value and every external input.
  last_use.assign(v.order.size(), -1);
  pos_width.assign(v.order.size(), 0);
  ext.clear();
  reads.clear();
  reads_begin.clear();
  for (int p : subset) {
    reads_begin.push_back(static_cast<int>(reads.size()));
    pos_width[p] = width(v.order[p]);
    for (const InEdge& e : g.in_edges(v.order[p])) {
      NodeId o = e.src;
      int op = v.pos(o);
      if (op >= 0 && in_subset[op]) {
        last_use[op] = std::max(last_use[op], p);
        reads.push_back({op, -1});
      } else {
        if (ext_index[o] < 0) {
          ext_index[o] = static_cast<int>(ext.size());
          ext.push_back({o, p, false, width(o)});
        } else {
          External& e = ext[ext_index[o]];
          e.last_use = std::max(e.last_use, p);
        }
        reads.push_back({-1, ext_index[o]});
      }
    }
  }
  reads_begin.push_back(static_cast<int>(reads.size()));
  for (const External& e : ext) ext_index[e.node] = -1;
  int live = 0, peak = 0;
  for (std::size_t i = 0; i < subset.size(); ++i) {
    const int p = subset[i];
    const Read* r0 = reads.data() + reads_begin[i];
    const Read* r1 = reads.data() + reads_begin[i + 1];
    for (const Read* r = r0; r != r1; ++r)
      if (r->pos < 0 && !ext[r->ext].loaded) {
        ext[r->ext].loaded = true;
        live += ext[r->ext].width;
      }
    live += pos_width[p];
    peak = std::max(peak, live);
    // Free what dies here: operands at their last use, p if unused later.
    for (const Read* r = r0; r != r1; ++r) {
      if (r->pos >= 0) {
        if (last_use[r->pos] == p) { live -= pos_width[r->pos]; last_use[r->pos] = -2; }
      } else {
        External& e = ext[r->ext];
        if (e.last_use == p) { live -= e.width; e.last_use = -2; }
      }
    }
    if (last_use[p] == -1) live -= pos_width[p];
  }
  return peak;
}

int count_reductions(const GroupView& v) {
  int r = 0;
  for (NodeId n : v.order) r += v.g.op_class(n) == OpClass::reduction;
  return r;
}

NodeId first_contraction(const GroupView& v) {
  for (NodeId n : v.order)
    if (v.g.op_class(n) == OpClass::contraction) return n;
  return kNoNode;
}

PooledVector<int> all_positions(const GroupView& v) {
  PooledVector<int> s;
  s.resize(v.order.size());
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<int>(i);
  return s;
}

// Positions of each horizontal branch (empty branches list: the whole group).
std::vector<std::vector<int>> branch_positions(const GroupView& v) {
  std::vector<std::vector<int>> out;
  for (const auto& b : v.grp.branches) {
    std::vector<int> s;
    for (NodeId n : b)
      if (int p = v.pos(n); p >= 0) s.push_back(p);
    std::sort(s.begin(), s.end());
    if (!s.empty()) out.push_back(std::move(s));
  }
  if (out.empty()) out.push_back(all_positions(v));
  return out;
}

// Largest per-node iteration space. For a horizontal group this is the widest
// branch: one thread evaluates every branch at its index, which is the
// execution the summed register estimate describes.
double iteration_space(const GroupView& v) {
  double it = 0;
  for (NodeId n : v.order)
    if (v.g.op_class(n) != OpClass::source) it = std::max(it, node_facts(v.g, n).work_elems);
  return it;
}

RegisterEstimate estimate_gpu(const GroupView& v, const DeviceSpec& d) {
  RegisterEstimate r;
  const GpuSpec& gpu = *d.gpu;
  const double ept = std::max(1, gpu.elems_per_thread);
  const int tpb_loop = std::max(1, gpu.threads_per_block);
  int tpb = tpb_loop;
  const int reductions = count_reductions(v);
  const int reduction_regs = reductions ? reductions * kGpuRegsPerReduction + kGpuReductionIndexRegs : 0;
  r.base_regs = kGpuAddressRegs;
  switch (v.grp.kind) {
    case GroupKind::contraction: {
      NodeId c = first_contraction(v);
      double acc_bytes = c == kNoNode ? 4 : std::max<double>(4, dtype_bytes(v.g.node(c).out.dtype));
      tpb = kTileThreads;
      r.accumulator_regs = static_cast<int>(kTileM * kTileN / kTileThreads * acc_bytes / kBytesPerReg);
      r.extra_regs = r.accumulator_regs + kGpuOperandFragmentRegs;
      r.live_regs = peak_live(v, all_positions(v), 1, kBytesPerReg);  // epilogue: one accumulator at a time
      double out_elems = c == kNoNode ? 0 : static_cast<double>(v.g.numel(c));
      r.threads = out_elems / (kTileM * kTileN) * kTileThreads;
      break;
    }
    case GroupKind::multipass: {
      double row = reduction_row_elems(v);
      int row_regs = static_cast<int>(std::ceil(row / tpb));
      r.live_regs = peak_live(v, all_positions(v), 1, kBytesPerReg);
      if (row_regs <= kGpuRowRegsLimit) r.extra_regs = row_regs;
      else r.smem_bytes = reduction_row_bytes(v);  // staged in shared memory instead
      r.extra_regs += reduction_regs;
      double rows = row > 0 ? iteration_space(v) / row : 0;
      r.threads = rows * tpb;
      break;
    }
    case GroupKind::horizontal: {
      // Sum over branches (docs/vocabulary.md, horizontal fusion): the kernel holds every
      // branch's live values; threads cover the widest branch (README "Gaps").
      for (const auto& b : branch_positions(v)) r.live_regs += peak_live(v, b, ept, kBytesPerReg);
      r.extra_regs = reduction_regs;
      r.threads = iteration_space(v) / ept;
      break;
    }
    default:
      r.live_regs = peak_live(v, all_positions(v), ept, kBytesPerReg);
      r.extra_regs = reduction_regs;
      r.threads = iteration_space(v) / ept;
      break;
  }
  r.regs = r.base_regs + r.live_regs + r.extra_regs;
  const int limit = std::max(1, gpu.max_regs_per_thread);
  if (r.regs > limit) r.spill_bytes_raw = (r.regs - limit) * kBytesPerReg * 2 * r.threads;  // store + load
  r.spill_bytes = r.spill_bytes_raw * d.spill_penalty;
  r.occupancy = gpu_occupancy(r.regs, tpb, r.smem_bytes, d);
  return r;
}

RegisterEstimate estimate_cpu(const GroupView& v, const DeviceSpec& d) {
  RegisterEstimate r;
  const double lanes_f32 = kCpuVectorBytes / 4;  // the loop is vectorised over f32 lanes
  const int reductions = count_reductions(v);
  // A contraction runs in the library (exec/onednn.h), its registers its
  // own: the emitted loops are the prologue and epilogue passes around the
  // call, priced at their own live values.
  r.extra_regs = reductions * kCpuRegsPerReduction;
  if (v.grp.kind == GroupKind::horizontal) {
    for (const auto& b : branch_positions(v)) r.live_regs += peak_live(v, b, lanes_f32, kCpuVectorBytes);
  } else {
    r.live_regs = peak_live(v, all_positions(v), lanes_f32, kCpuVectorBytes);
  }
  r.regs = r.live_regs + r.extra_regs;  // addresses live in general-purpose registers
  r.threads = iteration_space(v) / lanes_f32;  // vector iterations
  const int limit = std::max(1, d.cpu->vector_regs);
  if (r.regs > limit) r.spill_bytes_raw = (r.regs - limit) * kCpuVectorBytes * 2 * r.threads;  // store + load
  r.spill_bytes = r.spill_bytes_raw * d.spill_penalty;
  r.occupancy = 1.0;
  return r;
}

}  // namespace

double gpu_occupancy(int regs, int tpb, double smem_bytes, const DeviceSpec& d) {
  // Resident blocks limited by registers (and shared memory).
  const GpuSpec& gpu = *d.gpu;
  const int limit = std::max(1, gpu.max_regs_per_thread);
  tpb = std::max(1, tpb);
  int used = std::max(1, std::min(regs, limit));
  used = (used + kGpuRegAllocUnit - 1) / kGpuRegAllocUnit * kGpuRegAllocUnit;
  double blocks = std::floor(static_cast<double>(gpu.regs_per_sm) / (static_cast<double>(used) * tpb));
  if (smem_bytes > 0 && gpu.smem_per_sm_bytes > 0)
    blocks = std::min(blocks, std::floor(gpu.smem_per_sm_bytes / smem_bytes));
  double resident = blocks >= 1 ? blocks * tpb : static_cast<double>(gpu.regs_per_sm) / used;
  return gpu.max_threads_per_sm > 0 ? std::min(1.0, resident / gpu.max_threads_per_sm) : 1.0;
}

RegisterEstimate estimate_registers(const GroupView& v, const DeviceSpec& d) {
  return d.is_gpu() ? estimate_gpu(v, d) : estimate_cpu(v, d);
}

}  // namespace fuseplan::costmodel_detail
