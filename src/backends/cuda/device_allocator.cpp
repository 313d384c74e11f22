#include "backends/cuda/device_allocator.h"

#include <cuda_runtime.h>

#include <utility>

#include "core/error.h"

namespace dsv4::cuda {

namespace {

constexpr size_t k_small_step = 512;
constexpr size_t k_large_step = size_t(2) << 20;
constexpr size_t k_large_from = size_t(1) << 20;

using free_lists = std::map<size_t, std::vector<void*>>;

}  // namespace

struct device_allocator::state {
  int device = 0;
  std::mutex mu;
  free_lists shared;              // the shared cache
  std::shared_ptr<pool> current;  // null: allocations come from the shared cache
  size_t allocated = 0, reserved = 0, mallocs = 0;
  // defer_frees depth, and the blocks freed meanwhile (their pool, null: shared; size class).
  int defer_depth = 0;
  struct deferred_block {
    std::shared_ptr<pool> owner;
    size_t cls;
    void* ptr;
  };
  std::vector<deferred_block> deferred;

  ~state() {
    cudaSetDevice(device);
    for (auto& [cls, blocks] : shared)
      for (void* p : blocks) cudaFree(p);
  }
  // Caller holds mu.
  void release_shared() {
    for (auto& [cls, blocks] : shared) {
      for (void* p : blocks) cudaFree(p);
      reserved -= cls * blocks.size();
    }
    shared.clear();
  }
};

struct device_allocator::pool {
  std::shared_ptr<state> owner;
  free_lists free;
  // The graph that used these blocks is gone and no block is live: they become shared.
  ~pool() {
    std::lock_guard lock(owner->mu);
    for (auto& [cls, blocks] : free) {
      auto& dst = owner->shared[cls];
      dst.insert(dst.end(), blocks.begin(), blocks.end());
    }
  }
};

device_allocator::device_allocator(int device) : s_(std::make_shared<state>()) {
  s_->device = device;
}

device_allocator::~device_allocator() = default;

size_t device_allocator::size_class(size_t bytes) {
  if (bytes == 0) return k_small_step;
  if (bytes < k_large_from) return (bytes + k_small_step - 1) / k_small_step * k_small_step;
  return (bytes + k_large_step - 1) / k_large_step * k_large_step;
}

std::shared_ptr<void> device_allocator::allocate(size_t bytes) {
  const size_t cls = size_class(bytes);
  std::shared_ptr<state> st = s_;
  std::lock_guard lock(st->mu);
  std::shared_ptr<pool> p = st->current;
  free_lists& lists = p ? p->free : st->shared;
  void* ptr = nullptr;
  if (auto it = lists.find(cls); it != lists.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
  } else {
    cudaError_t status = cudaMalloc(&ptr, cls);
    if (status == cudaErrorMemoryAllocation) {
      // Cached blocks of other sizes may be what is missing.
      cudaGetLastError();
      st->release_shared();
      status = cudaMalloc(&ptr, cls);
    }
    if (status != cudaSuccess)
      fail("cuda: cudaMalloc of {} bytes ({} reserved, {} in use): {}", cls, st->reserved,
           st->allocated, cudaGetErrorString(status));
    st->reserved += cls;
    ++st->mallocs;
  }
  st->allocated += bytes;
  return std::shared_ptr<void>(ptr, [st, p = std::move(p), bytes, cls](void* q) {
    std::lock_guard lock(st->mu);
    st->allocated -= bytes;
    if (st->defer_depth > 0)
      st->deferred.push_back({p, cls, q});
    else
      (p ? p->free : st->shared)[cls].push_back(q);
  });
}

void device_allocator::defer_frees() {
  std::lock_guard lock(s_->mu);
  ++s_->defer_depth;
}

void device_allocator::release_deferred_frees() {
  // The pools' last references may go with `released`: after the lock (their destructors take it).
  std::vector<state::deferred_block> released;
  std::lock_guard lock(s_->mu);
  DSV4_CHECK(s_->defer_depth > 0, "cuda allocator: release_deferred_frees without defer_frees");
  if (--s_->defer_depth > 0) return;
  released.swap(s_->deferred);
  for (const state::deferred_block& b : released)
    (b.owner ? b.owner->free : s_->shared)[b.cls].push_back(b.ptr);
}

std::shared_ptr<device_allocator::pool> device_allocator::new_private_pool() {
  auto p = std::make_shared<pool>();
  p->owner = s_;
  return p;
}

device_allocator::pool_scope::pool_scope(device_allocator& a, std::shared_ptr<pool> p) : a_(a) {
  std::lock_guard lock(a_.s_->mu);
  previous_ = std::exchange(a_.s_->current, std::move(p));
}

device_allocator::pool_scope::~pool_scope() {
  std::shared_ptr<pool> leaving;  // released after the lock: its destructor takes the lock
  std::lock_guard lock(a_.s_->mu);
  leaving = std::exchange(a_.s_->current, std::move(previous_));
}

size_t device_allocator::allocated_bytes() const {
  std::lock_guard lock(s_->mu);
  return s_->allocated;
}

size_t device_allocator::reserved_bytes() const {
  std::lock_guard lock(s_->mu);
  return s_->reserved;
}

size_t device_allocator::malloc_count() const {
  std::lock_guard lock(s_->mu);
  return s_->mallocs;
}

void device_allocator::release_cached() {
  std::lock_guard lock(s_->mu);
  s_->release_shared();
}

}  // namespace dsv4::cuda
