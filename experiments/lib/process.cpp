// The process set-up and the list flags' clean-up (harness.hpp).
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

namespace {
template <class T>
void first_of_each(std::vector<T>& v) {
  std::vector<T> kept;
  for (const T& x : v)
    if (std::find(kept.begin(), kept.end(), x) == kept.end()) kept.push_back(x);
  v = std::move(kept);
}
}  // namespace

void keep_first_of_each(std::vector<std::string>& v) { first_of_each(v); }
void keep_first_of_each(std::vector<std::size_t>& v) { first_of_each(v); }
void keep_first_of_each(std::vector<double>& v) { first_of_each(v); }

void sort_unique(std::vector<std::size_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace gs::experiments
