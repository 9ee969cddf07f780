#include "experiments/lib/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace gs::experiments {

Progress::Progress(std::string program, std::size_t total, std::string unit)
    : program_(std::move(program)), unit_(std::move(unit)), total_(total), terminal_(::isatty(2) != 0) {}

void Progress::advance(std::size_t units, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += units;
  const bool last = done_ >= total_;
  const auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    if (!last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  } else {
    if (!last && done_ < next_plain_) return;
    next_plain_ = done_ + std::max<std::size_t>(1, total_ / 10);
  }
  last_draw_ = now;
  constexpr std::size_t width = 24;
  const std::size_t filled = total_ ? std::min(width, width * done_ / total_) : width;
  std::string bar(filled, '=');
  if (filled < width) bar += '>' + std::string(width - filled - 1, ' ');
  std::fprintf(stderr, "%s%s [%s] %zu/%zu %s  %s%s", terminal_ ? "\r" : "", program_.c_str(), bar.c_str(), done_, total_,
               unit_.c_str(), what.c_str(), terminal_ ? "\x1b[K" : "\n");
  std::fflush(stderr);
  open_ = terminal_;
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

}  // namespace gs::experiments
