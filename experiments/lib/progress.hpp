// One line on stderr that says how far a run is, the same for every binary:
//   warmup [=========>              ] 1200/24000 steps  post, warmup 100, lr 0.01, seed 0: loss 2.7133
// redrawn in place on a terminal (at most 10 times a second); when stderr is a log file instead, one
// plain line each time another tenth of the work is done, and at the end. Safe to call from threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace gs::experiments {

class Progress {
 public:
  // `total` units of work (steps, layers measured, ...), named `unit` in the line.
  Progress(std::string program, std::size_t total, std::string unit);
  void advance(std::size_t units, const std::string& what);  // `units` more done, the last of them `what`
  void finish();                                              // ends the line

 private:
  std::mutex mutex_;
  std::string program_, unit_;
  std::size_t total_, done_ = 0, next_plain_ = 0;
  bool terminal_, open_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace gs::experiments
