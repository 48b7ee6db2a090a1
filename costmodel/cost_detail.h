// Internal pieces of the cost model shared by its .cpp files (not part of
// the public API; tests may use them).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "costmodel/contraction.h"
#include "costmodel/device.h"
#include "costmodel/features.h"
#include "costmodel/group.h"
#include "costmodel/scratch.h"
#include "costmodel/terms.h"
#include "graph/graph.h"
#include "support/format.h"

namespace fuseplan::costmodel_detail {

// GEMM/conv output tile and its thread count, as the contraction emitter and
// library kernels use it (CUTLASS's default SM80/SM90 128x128 threadblock tile
// with 8 warps; the seed text's 128x128-over-256-threads example).
inline constexpr int kTileM = 128;
inline constexpr int kTileN = 128;
inline constexpr int kTileThreads = 256;

/// A group's nodes in topological order with an id -> position lookup.
/// Built once per cost() call. The lookup is a per-thread table indexed by
/// NodeId (filled here, cleared by the destructor: O(1) per pos(), which the
/// cost model asks for every edge it walks); a view built while another
/// view of the same thread holds the table falls back to a sorted index.
struct GroupView {
  const Graph& g;
  const Group& grp;
  PooledVector<NodeId> order;                  // grp.nodes sorted by topo index

  GroupView(const Graph& graph, const Group& group);
  ~GroupView();
  GroupView(const GroupView&) = delete;
  GroupView& operator=(const GroupView&) = delete;
  /// Position of n in `order`, or -1 when n is not in the group.
  int pos(NodeId n) const {
    return table_ ? (n < table_size_ ? table_[n] : -1) : pos_in_index(n);
  }

 private:
  int pos_in_index(NodeId n) const;
  int* table_ = nullptr;       // the per-thread table when this view holds it (-1: not a member)
  std::size_t table_size_ = 0;
  PooledVector<std::pair<NodeId, int>> index_;  // (node, position), sorted by node: only without the table
};

/// Elements a primitive works on: the reduced input for a reduction (so a
/// fused prologue runs once per reduction step), its output otherwise.
double work_elems(const Graph& g, NodeId n);

/// Numbers of one primitive that depend on it alone, whatever group holds it.
struct NodeFacts {
  double flops = 0;             // primitive_flops(g, n)
  int contraction_class = -1;   // contraction_class(g, n) as an index into ContractionClass, -1: not a contraction
  double work_elems = 0;        // work_elems(g, n)
  bool transcendental = false;  // elementwise/broadcast op with is_transcendental(op)
  bool read_in_part = false;    // some consumer reads only part of it (reads_in_part)
  double reduce_lanes = 1;      // a reduce op's lanes on the CPU (graph/op_attrs.h reduce_lanes), else 1
  // As a consumer, the recomputation it asks of a fused producer (group_flops):
  bool is_pool = false;         // MaxPool / AveragePool: every window re-reads
  double pool_window = 1;       // window elements (product of kernel_shape)
  double prologue_taps = 1;     // contraction: kernel taps reading each element of operand 0 (a conv's R·S/stride)
  double prologue_tiles = 1;    // contraction: output tiles along N re-reading operand 0 (>= 1)
  double weight_tiles = 1;      // contraction: output tiles along M re-reading operand 1 (>= 1)
};
/// NodeFacts of n, memoised per thread for the last graph revision asked
/// about (Graph::revision(); revision 0 is computed every time): the search
/// prices each primitive in thousands of candidate groups. Throws as
/// primitive_flops (a count that overflows). The reference stays valid while
/// the graph revision does (for revision 0: until the thread's next call).
const NodeFacts& node_facts(const Graph& g, NodeId n);

/// Row length (elements) of the widest reduction in the group, 0 if none.
double reduction_row_elems(const GroupView& v);
/// Bytes of that row (row elements × the reduced input's element size).
double reduction_row_bytes(const GroupView& v);

/// Whether consumer c reads its operand n only in part: a Slice reads the
/// elements it outputs, a gather-class primitive's data operand the rows (or
/// elements) it gathers; n must not also be another operand of c.
bool reads_in_part(const Graph& g, NodeId c, NodeId n);

/// Bytes the group reads of its input n (outside the group, or a source in
/// it): the whole tensor, unless every primitive of the group reading n
/// touches only part of it — a Slice (as many bytes as it outputs) or a
/// gather's data operand (the gathered rows) — then their sum, at most the
/// tensor (an embedding lookup reads its rows, not the table; q, k, v
/// sliced from one projection read a third each).
double input_bytes_read(const Graph& g, const GroupView& v, NodeId n);


// ---- flops.cpp ----
struct GroupFlops {
  double contraction = 0;     // FLOPs of contraction nodes × times computed
  std::array<double, kContractionClassCount> contraction_by_class{};  // `contraction` by contraction_class(), each
                                                                     // MatMul over its contraction_lane_fill
  double contraction_calls = 0;  // contraction library calls (exec/onednn.h): one per contraction node computed
  double other = 0;           // everything else (FP32 peak)
  double transcendental = 0;  // the part of `other` from transcendental ops (is_transcendental)
  double scalar = 0;          // the part of `other` from non-transcendental elementwise nodes evaluated in a
                              // stage that also evaluates a transcendental op: the CPU backend's loop calls
                              // libm there and does not vectorise, so they run one lane at a time
  double reduction_steps = 0; // serial steps of emitted adding reductions (sum/mean/prod) × times computed:
                              // per output, the row's chain (its length, or in lanes its length / lanes
                              // + log2 lanes fold steps: a vector step waits on the add as a scalar one
                              // does, 0.87 against 0.79 ns on one Zen 4 thread) beyond kReduceOverlapSteps;
                              // and of CumSum, per chain along its axis, the chain length beyond it
  double select_steps = 0;    // reduced input elements / lanes of emitted ReduceMax/ReduceMin × times computed
  double pool_steps = 0;      // window elements of MaxPool/AveragePool (output × kernel window) × times computed
  PooledVector<double> times;  // per position in GroupView::order: times computed
  double total() const { return contraction + other; }
};
/// Σ primitive_flops × times computed (see costmodel/README.md). With `d`,
/// a transcendental op's FLOP-equivalents are transcendental_weight on d
/// (its probe-measured time where d has one), in `other` and
/// `transcendental` alike.
GroupFlops group_flops(const GroupView& v, const DeviceSpec* d = nullptr);
/// FLOP-equivalents per element of transcendental op `op` on d: its
/// probe-measured ns per element (CpuSpec::transcendental_ns) × one
/// core's FP32 rate (fp32_TFLOPs × 1000 / cores FLOP per ns) when d
/// lists it, else costmodel/flops.cpp's estimate.
double transcendental_weight(std::string_view op, const DeviceSpec& d);
/// Elements each transcendental op of the group evaluates (output elements ×
/// times computed, GroupFlops::times), by op name.
std::map<std::string, double, std::less<>> transcendental_elems(const GroupView& v, const GroupFlops& f);
/// The math routine the CPU backend calls for transcendental op `op`
/// (graph/op_traits.h LibmRoutine; float: libfuseplan_vmath): "exp" for Exp, Sigmoid, Elu and
/// Softplus (fprt::exp_), else "erf", "tanh", "log", "sin_cos" or "pow".
std::string_view libm_routine(std::string_view op);
/// Distinct libm routines of a group's transcendental_elems (ops with
/// elements > 0). E.g. {Exp, Sigmoid, Tanh}: 2 (expf, tanhf).
double libm_routines(const std::map<std::string, double, std::less<>>& elems);
/// The same count for a group, from its nodes (no map: cost()'s hot path).
double libm_routines(const GroupView& v, const GroupFlops& f);
/// Σ elements × transcendental_weight on d: the transcendental
/// FLOP-equivalents of a group on d from its transcendental_elems.
double transcendental_flops(const std::map<std::string, double, std::less<>>& elems, const DeviceSpec& d);
/// Steps at the start of each reduction row that overlap the previous row's
/// chain: the out-of-order window (a reorder buffer of ~256-512 µops, 4-8
/// µops per emitted step) runs the next row's first steps in the shadow of
/// the previous row's adds. Set from two training groups of
/// results/calibration (bert_base_layer probs/sum, rows of 128: 0.27 ns per
/// reduced element; ln var, rows of 768: 0.44 ns), not fitted.
inline constexpr double kReduceOverlapSteps = 64;
/// Whether primitive op `op` is a transcendental function (exp, log, tanh,
/// erf, sin, cos, pow and the ops built on them): libm calls on the CPU.
bool is_transcendental(std::string_view op);
/// Effective efficiency of transcendental FLOPs on d (a CPU's e_transcendental, or e_cmp when 0 or on a GPU).
inline double transcendental_efficiency(const DeviceSpec& d) {
  return d.cpu && d.cpu->e_transcendental > 0 ? d.cpu->e_transcendental : d.e_cmp;
}
/// Extra FLOP-equivalents per FLOP of GroupFlops::scalar on d: on a CPU a
/// scalar op issues one element where a vectorised loop issues vector_lanes
/// (the fp32 lanes of its vectors), so each FLOP counts vector_lanes times
/// at e_cmp, vector_lanes − 1 on top of `other`; 0 on a GPU (SIMT lanes run
/// libm calls like any other instruction).
inline double scalar_extra_flops(const DeviceSpec& d) { return d.cpu ? std::max(0, d.cpu->vector_lanes - 1) : 0.0; }

/// CPU: whether a graph of `graph_bytes` (graph_footprint_bytes; < 0:
/// unknown, a converted fuseplan.measurement/1 record: taken as beyond)
/// fits in d's LLC (llc_bytes).
inline bool fits_llc(double graph_bytes, const DeviceSpec& d) { return graph_bytes >= 0 && graph_bytes <= llc_bytes(d); }
/// CPU: the bytes of `written` priced at CpuSpec::write_allocate_bw_GBps
/// in a graph of `graph_bytes`: those beyond the store queue
/// (store_buffer_bytes) when the graph fits in the LLC, every one when it
/// does not (the queue is taken by the earlier groups' stores); 0 when the
/// device sets no such bandwidth (GPU, or an uncalibrated CPU device: all
/// writes at the working-set level). E.g. 1024 B written with a 2048 B
/// queue: 0 within the LLC, 1024 beyond it.
inline double write_allocate_bytes(double written, double graph_bytes, const DeviceSpec& d) {
  if (!d.cpu || !(d.cpu->write_allocate_bw_GBps > 0)) return 0;
  const double free_bytes = fits_llc(graph_bytes, d) ? d.cpu->store_buffer_bytes : 0;
  return written > free_bytes ? written - free_bytes : 0;
}
/// CPU: the store-buffer stalls of a group writing `written` bytes in a graph
/// of `graph_bytes`: 1 when it writes anything in a graph beyond the LLC
/// (each line written first evicts a dirty one), priced ×
/// CpuSpec::store_stall_us; else 0, and 0 when the device prices no
/// write-allocate.
inline double store_stalls(double written, double graph_bytes, const DeviceSpec& d) {
  return !fits_llc(graph_bytes, d) && write_allocate_bytes(written, graph_bytes, d) > 0 ? 1 : 0;
}
/// CPU: the cold libm routines of a group calling `routines` distinct ones
/// in a graph of `graph_bytes` (docs/cost-model.md): all of
/// them beyond the LLC (the groups before it evicted their code and
/// tables; a graph_bytes < 0, unknown, counts as beyond), none within it;
/// 0 on a GPU.
inline double libm_cold_calls(double routines, double graph_bytes, const DeviceSpec& d) {
  return !d.cpu || fits_llc(graph_bytes, d) ? 0 : routines;
}
// ---- registers.cpp ----
struct RegisterEstimate {
  int regs = 0;               // estimated registers per thread (GPU) / vector registers (CPU)
  int live_regs = 0;          // from the expression DAG: peak live values × width
  int base_regs = 0;          // address / index registers
  int extra_regs = 0;         // accumulators, shuffles, resident row, operand fragments
  int accumulator_regs = 0;   // contraction: tile_m·tile_n/threads (part of extra_regs)
  double threads = 0;         // threads (GPU) or vector iterations (CPU) the kernel runs
  double spill_bytes_raw = 0; // local-memory (GPU) / L1 (CPU) traffic, stores + loads, bytes
  double spill_bytes = 0;     // spill_bytes_raw × spill_penalty
  double occupancy = 1.0;     // resident threads / max threads per SM (1 on CPU)
  double smem_bytes = 0;      // shared memory per block (multipass rows that miss registers)
};
RegisterEstimate estimate_registers(const GroupView& v, const DeviceSpec& d);
/// GPU occupancy (resident threads / max per SM) of `regs` registers per
/// thread in blocks of `tpb` threads using `smem_bytes` shared memory per block.
double gpu_occupancy(int regs, int tpb, double smem_bytes, const DeviceSpec& d);

// ---- features.cpp ----
/// What cost() learns of a group before pricing it: its inputs, FLOPs,
/// registers (estimated, or measured by the installed ResourceOracle) and
/// the features the terms price.
struct GroupAnalysis {
  PooledVector<NodeId> inputs;      // external inputs (sources in the group too), sorted, each once
  PooledVector<NodeId> immediates;  // scalar constants read only inline (no bytes), sorted, each once
  double passes = 1;                // reads of each input (a multipass row not resident: reductions + 1)
  GroupFlops flops;                 // at d's transcendental weights
  RegisterEstimate regs;            // what priced the group: the estimate, or the measurement
  int regs_estimate = 0;            // the estimate's registers per thread
  double spill_bytes_estimate = 0;  // the estimate's spill traffic, bytes (× spill_penalty)
  int regs_measured = -1;           // measured registers per thread, -1: none
  double spill_bytes_measured = -1; // measured spill traffic, bytes (× spill_penalty), -1: none
  bool measured = false;            // priced with the measurement
  CostFeatures features;            // transcendental FLOPs at d's weights, no transcendental_elems
};
/// Analyses the group of v on d (asks the installed ResourceOracle as cost() does).
void analyse_group(const GroupView& v, const DeviceSpec& d, GroupAnalysis& a);

// ---- breakdown.cpp ----
/// The breakdown text of a priced group (cost.h explain_cost): what it
/// reads, writes and computes, its registers, then each term's line.
void write_breakdown(std::string& out, const GroupView& v, const GroupAnalysis& a, const GroupCost& c,
                     const TermPrices& p, const DeviceSpec& d);

}  // namespace fuseplan::costmodel_detail
