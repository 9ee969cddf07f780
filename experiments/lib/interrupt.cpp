#include "experiments/lib/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace gs::experiments {

namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void on_signal(int signal) { received = signal; }  // nothing else: the loops look at it

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // a second signal gets the default action: the process ends at once
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interrupt_signal() { return received; }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
  }
  return "signal " + std::to_string(signal);
}

bool stop_requested(std::size_t step) {
  static const char* pause_at = std::getenv("GRADSCOPE_TEST_PAUSE_AT");
  if (pause_at && std::strncmp(pause_at, "step.", 5) == 0 && std::strtoull(pause_at + 5, nullptr, 10) == step)
  {
    ::raise(SIGSTOP);
    // The test sends its signal while the process is stopped; another thread may run the handler a
    // moment after this one resumes: wait for it (at most a second), so that the test is deterministic.
    for (int i = 0; i < 100 && received == 0; ++i) ::usleep(10000);
  }
  return received != 0;
}

Interrupted::Interrupted(int sig, std::size_t at, std::string what)
    : std::runtime_error("interrupted by " + signal_name(sig) + " at step " + std::to_string(at) + what),
      signal(sig),
      step(at),
      detail(std::move(what)) {}

Interrupted::Interrupted(int sig, Phase, std::string where)
    : std::runtime_error("interrupted by " + signal_name(sig) + " " + where),
      signal(sig),
      step(static_cast<std::size_t>(-1)),
      detail(std::move(where)) {}

void stop_if_requested_in(const char* phase, const std::string& where) {
  static const char* pause_at = std::getenv("GRADSCOPE_TEST_PAUSE_AT");
  static std::atomic<bool> paused{false};
  if (pause_at && std::strcmp(pause_at, phase) == 0 && !paused.exchange(true)) {
    ::raise(SIGSTOP);
    for (int i = 0; i < 100 && received == 0; ++i) ::usleep(10000);
  }
  if (received != 0) throw Interrupted(received, Interrupted::Phase{}, where);
}

void stop_if_requested(std::size_t step) {
  if (stop_requested(step)) throw Interrupted(interrupt_signal(), step);
}

}  // namespace gs::experiments
