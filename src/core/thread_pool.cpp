#include "core/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace dsv4 {

namespace {
// Set while a thread is inside a parallel_for job: nested calls then run inline, which avoids
// deadlock and keeps the partition deterministic.
thread_local bool t_inside_job = false;
}  // namespace

thread_pool::thread_pool(int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

thread_pool::~thread_pool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void thread_pool::worker_loop(int) {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++active_;
    drain(lock);
    if (--active_ == 0) done_.notify_all();
  }
}

void thread_pool::drain(std::unique_lock<std::mutex>& lock) {
  // Takes chunks of the current job until none is left; runs each without the lock. The first
  // exception is kept for parallel_for to rethrow.
  while (next_ < job_n_) {
    const int64_t begin = next_;
    const int64_t end = std::min(job_n_, begin + job_chunk_);
    next_ = end;
    lock.unlock();
    try {
      t_inside_job = true;
      (*job_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> g(mutex_);
      if (!first_error_) first_error_ = std::current_exception();
    }
    t_inside_job = false;
    lock.lock();
  }
}

void thread_pool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                               int64_t min_chunk) {
  if (n <= 0) return;
  if (workers_.empty() || t_inside_job || n <= min_chunk) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  const int64_t parts = int64_t(size()) * 4;
  const int64_t chunk = std::max<int64_t>(min_chunk, (n + parts - 1) / parts);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunk_ = chunk;
    next_ = 0;
    first_error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::unique_lock<std::mutex> lock(mutex_);
  ++active_;
  drain(lock);
  --active_;
  done_.wait(lock, [&] { return active_ == 0; });
  job_ = nullptr;
  job_n_ = 0;
  if (first_error_) {
    auto e = first_error_;
    first_error_ = nullptr;
    std::rethrow_exception(e);
  }
}

thread_pool& thread_pool::global() {
  static thread_pool pool([] {
    const char* env = std::getenv("DSV4_THREADS");
    return env ? std::atoi(env) : 0;
  }());
  return pool;
}

}  // namespace dsv4
