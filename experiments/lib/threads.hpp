// The grid's cells on --jobs threads.
#pragma once

#include <cstddef>
#include <functional>

namespace gs::experiments {

// Calls fn(0), ..., fn(n - 1) on `jobs` threads (the calling thread is one of them), each index once,
// in no particular order. Each thread has its own tape (Tape::current() is per thread), so fn may
// train its own model; it must not touch another index's data. Rethrows the first exception.
void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn);

}  // namespace gs::experiments
