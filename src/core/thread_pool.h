// A fixed pool of worker threads with a blocking parallel_for. The CPU backend splits work over
// independent output rows, so results do not depend on the thread count.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dsv4 {

class thread_pool {
 public:
  explicit thread_pool(int threads);  // threads <= 0: hardware concurrency
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls fn(begin, end) over disjoint chunks covering [0, n); returns when all are done. The
  // calling thread works too. Exceptions thrown by fn are rethrown here (the first one).
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                    int64_t min_chunk = 1);

  // The process-wide pool (sized by DSV4_THREADS, else hardware concurrency).
  static thread_pool& global();

 private:
  void worker_loop(int index);
  void drain(std::unique_lock<std::mutex>& lock);  // called with mutex_ held

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunk_ = 0;
  int64_t next_ = 0;
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr first_error_;
  std::mutex run_mutex_;  // one parallel_for at a time
};

}  // namespace dsv4
