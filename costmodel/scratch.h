// PooledVector: a std::vector whose buffer comes from, and goes back to, a
// per-thread pool. The search prices ~10^5 candidate groups per 10k
// primitives, and allocating and freeing the few small vectors of each
// pricing would be a fifth of its instructions; a pooled vector keeps its capacity
// from one pricing to the next. It is an ordinary vector in every other way
// (contents start empty; copies, moves and nesting are safe: a borrower
// nested inside another simply takes another buffer).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace fuseplan {

template <class T>
class PooledVector : public std::vector<T> {
 public:
  PooledVector() {
    auto& p = pool();
    if (!p.empty()) {
      std::vector<T>::operator=(std::move(p.back()));
      p.pop_back();
      this->clear();
    }
  }
  PooledVector(const PooledVector& o) : PooledVector() { this->assign(o.begin(), o.end()); }
  PooledVector(PooledVector&& o) noexcept : std::vector<T>(std::move(o)) {}
  PooledVector& operator=(const PooledVector& o) {
    this->assign(o.begin(), o.end());
    return *this;
  }
  PooledVector& operator=(PooledVector&& o) noexcept {
    std::vector<T>::operator=(std::move(o));
    return *this;
  }
  ~PooledVector() {
    auto& p = pool();
    // Bounded: buffers moved out of pooled vectors leave more returns than
    // takes; the extra ones are simply freed. A buffer with no capacity is
    // not worth keeping.
    if (this->capacity() > 0 && p.size() < kMaxPooled) {
      try {
        p.push_back(std::move(static_cast<std::vector<T>&>(*this)));
      } catch (...) {  // the pool could not grow: free the buffer instead
      }
    }
  }

 private:
  static constexpr std::size_t kMaxPooled = 64;
  static std::vector<std::vector<T>>& pool() {
    thread_local std::vector<std::vector<T>> p;
    return p;
  }
};

}  // namespace fuseplan
