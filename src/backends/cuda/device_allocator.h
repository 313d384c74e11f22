// Caching device allocator of the CUDA backend. Sizes are rounded to classes (512 B steps below
// 1 MiB, 2 MiB steps above); a freed block goes back to a free list of its class and cudaMalloc
// runs only on a miss, so a step allocates and frees without cudaMalloc / cudaFree (cudaFree
// synchronises the device).
//
// Invariant: every block is used only by work ordered on the backend's main stream, so a block
// freed by the host while kernels that use it are still queued can be handed out again at once:
// the next user's work is ordered after them on that stream. Host-side copies into a block
// (cudaMemcpy) must first wait for the stream. A side branch (cuda_ops::begin_side_branch: work on
// a second stream, forked from the main one and joined back) breaks the ordering between the two
// branches, so while one is open (defer_frees) freed blocks are held back, and they return to
// their free lists only at the join (release_deferred_frees), once the main stream waits for the
// branch: a block is never handed to one branch while the other may still use it.
//
// Graph pools: while a private pool is active (a CUDA-graph capture and the eager warm-up run
// before it), allocations come from that pool and frees go back to it. Its blocks are never handed
// to anyone else while the pool lives (the graph's kernels have their addresses baked in); when
// the last handle to the pool goes, its free blocks join the shared cache, and its blocks still
// live join it when they are freed.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace dsv4::cuda {

class device_allocator {
 public:
  struct pool;  // a set of free lists (the shared one, or a graph's private one)

  explicit device_allocator(int device);
  ~device_allocator();
  device_allocator(const device_allocator&) = delete;
  device_allocator& operator=(const device_allocator&) = delete;

  // A block of at least `bytes` (0 allowed: the pointer is still valid and distinct). The
  // returned owner frees the block into its pool; it may outlive the allocator object's user
  // (the state it needs is shared).
  std::shared_ptr<void> allocate(size_t bytes);

  // Rounded size of a request.
  static size_t size_class(size_t bytes);

  // A new private pool, and the scope that makes it the one allocations come from.
  std::shared_ptr<pool> new_private_pool();
  class pool_scope {
   public:
    pool_scope(device_allocator& a, std::shared_ptr<pool> p);
    ~pool_scope();
    pool_scope(const pool_scope&) = delete;
    pool_scope& operator=(const pool_scope&) = delete;

   private:
    device_allocator& a_;
    std::shared_ptr<pool> previous_;
  };

  // Frees from now until release_deferred_frees are held back (nestable; see above).
  void defer_frees();
  void release_deferred_frees();

  // Bytes of live allocations (as requested); bytes held from cudaMalloc (live + cached, all
  // pools); cudaMalloc calls so far (a test can check that a warm step makes none).
  size_t allocated_bytes() const;
  size_t reserved_bytes() const;
  size_t malloc_count() const;
  // cudaFree of every free block of the shared cache (private pools keep theirs).
  void release_cached();

 private:
  struct state;
  std::shared_ptr<state> s_;
};

}  // namespace dsv4::cuda
