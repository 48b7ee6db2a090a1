// Where the CPU runner places a plan's buffers (exec/cpu_run.cpp run_plan),
// shared with the probe that times a cold source's first touch
// (probe/first_touch.h), so that both see the same prefetch and TLB state.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace fuseplan {

// The plan's buffers in one zeroed allocation, each starting on its own
// 4 KiB page and followed by 1 to 4 pages no tensor uses. The adjacent-line
// and L2 streamer prefetchers do not cross a page, and the next-page
// prefetcher (which fetches the first line of the following page when a
// stream reaches a page's end) lands in the gap, so after a cache flush
// whether a tensor's first lines are cached does not depend on which
// neighbouring tensor an earlier group touched: with 64-byte-aligned heap
// tensors, distilbert_tiny's single bias adds of one shape took 0.03 or
// 0.2 us depending on their neighbours; without the gap page, zoo_candy's
// bias scalars after a streamed weight measured 0.05 us (prefetched) or
// 0.2-0.4 us (cold) (docs/calibration.md). The gap's length varies with the
// buffer (a fixed hash of its index): with one page after each, tensors read
// in turn lie at a constant stride that Zen 4's prefetchers learn across
// repetitions: 64 one-line sources at a two-page stride, read in turn after
// each flush, were cold in 2 of 64 at the minimum over 301 repetitions on a
// Zen 4 thread (0.02 us against 0.13-0.14 cold); with gaps of 1-4 pages all
// 64 were cold. many_small_branches' graph inputs, laid out so, measured
// 0.05-0.07 us at the minimum.
class PageArena {
 public:
  static constexpr std::size_t kPage = 4096;  // x86-64 base page; prefetchers stop at its boundary
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;  // x86-64 2 MiB page (THP)
  /// sizes[n]: bytes of buffer n (0: none).
  explicit PageArena(const std::vector<std::size_t>& sizes) : offset_(sizes.size(), 0), size_(sizes) {
    std::size_t total = 0;
    for (std::size_t n = 0; n < sizes.size(); ++n) {
      offset_[n] = total;
      if (sizes[n]) total += (sizes[n] + kPage - 1) / kPage * kPage + gap_pages(n) * kPage;
    }
    // Backed by 2 MiB pages where the kernel allows (THP "madvise" or
    // "always"): a 4 KiB page per tensor would otherwise spend one TLB entry
    // per tiny tensor, and a cold translation (a nested page walk in a VM)
    // on each first touch in a large model.
    total = std::max<std::size_t>((total + kHugePage - 1) / kHugePage * kHugePage, kHugePage);
    base_.reset(static_cast<std::byte*>(::operator new(total, std::align_val_t{kHugePage})));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    ::madvise(base_.get(), total, MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
#endif
    std::memset(base_.get(), 0, total);
  }
  bool has(std::size_t n) const { return size_[n] > 0; }
  /// Unused pages after buffer n: 1 to 4, from Knuth's multiplicative hash of n.
  static std::size_t gap_pages(std::size_t n) {
    return 1 + ((static_cast<std::uint32_t>(n) * 2654435761u) >> 7) % 4;
  }
  std::span<std::byte> at(std::size_t n) { return {base_.get() + offset_[n], size_[n]}; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t{kHugePage}); }
  };
  std::unique_ptr<std::byte[], Free> base_;
  std::vector<std::size_t> offset_, size_;
};

}  // namespace fuseplan
