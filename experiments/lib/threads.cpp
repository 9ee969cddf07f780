#include "experiments/lib/threads.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace gs::experiments {

void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr error;
  auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        next = n;  // the others stop after their current index
      }
    }
  };
  std::vector<std::thread> threads;
  try {
    for (unsigned j = 1; j < std::min<std::size_t>(std::max(1u, jobs), n); ++j) threads.emplace_back(worker);
  } catch (const std::system_error&) {  // no more threads to be had: the ones started do the work
  }
  worker();
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace gs::experiments
