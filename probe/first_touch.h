// Probe of a cold source's first touch: what a group pays, beyond its bytes,
// to read a weight, constant or graph input that no cache holds, as
// `fuseplan measure` runs a plan (every buffer flushed before each
// repetition: docs/calibration.md). The cost model prices it as
// sources_read × source_read_us (costmodel/terms.cpp, CpuSpec); the bytes
// themselves are priced at the DRAM bandwidth. Without it the one-line bias
// and mask sources of distilbert_tiny's groups measured 0.17-0.23 µs cold
// against 0.04-0.12 µs warm and were predicted 0.03-0.07 µs.
#pragma once

#include <string>

namespace fuseplan {

struct FirstTouchTiming {
  double us = 0;     // µs per cold source (CpuSpec::source_read_us)
  std::string note;  // one line: placement, repetitions, the value
};

/// A kernel called as the runner calls a group (an indirect call between two
/// steady-clock reads) that reads one 64-byte source line and writes one
/// line of a warm output. 16 sources, each on its own page of an arena laid
/// out as the runner lays out a plan's buffers (exec/page_arena.h); each
/// repetition evicts the 16 source lines (CLFLUSH, MFENCE), times the 16
/// cold calls in a new random order (Zen 4's prefetchers learn a fixed one,
/// and the minimum over repetitions catches the prefetched calls), then the
/// 16 again warm. Per source: the median cold time less the median warm
/// time; the figure is the median over the sources. One thread (the
/// caller's). Throws Error where no line-eviction instruction exists, or the
/// cold calls took no longer than the warm ones (the caller keeps 0).
FirstTouchTiming first_touch_us();

}  // namespace fuseplan
