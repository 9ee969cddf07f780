// The process set-up, the clock, and the sorting of a depth list (harness.hpp).
#include <malloc.h>

#include <algorithm>

#include "experiments/lib/harness.hpp"

extern "C" void openblas_set_num_threads(int);

namespace gs::experiments {

void setup_process() {
  openblas_set_num_threads(1);
  mallopt(M_MMAP_THRESHOLD, 256 << 20);  // no mmap (and munmap) for blocks under 256 MiB
  mallopt(M_TRIM_THRESHOLD, 1 << 30);    // no trimming of the heap's top below 1 GiB
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void sort_unique(std::vector<std::size_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace gs::experiments
