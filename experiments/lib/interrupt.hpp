// SIGINT (Ctrl-C) and SIGTERM stop a run at the next step boundary, never in the middle of a step or
// of a write. The handler (installed by Experiment::main) only records the signal in a sig_atomic_t;
// the training loops look at it between steps:
//   - step_hooks (training.hpp; nn::train_step runs it) throws Interrupted before a step starts, and
//     run_cells before it starts a cell: a grid binary then writes no tables and no files of a half-measured grid;
//   - train asks stop_requested(step) itself, so that it can finish as at a normal end (its CSV rows,
//     the checkpoint of the last finished step) before it throws Interrupted;
//   - the phases without steps have their own safe points (stop_if_requested_in): each character of
//     train's --sample, each batch of amplification's measurement (as a step), each plot (report.hpp).
// Experiment::main prints Interrupted as one line, "PROGRAM: interrupted by SIGINT at step N ...", and
// exits 128 + the signal: 130 for SIGINT, 143 for SIGTERM, as a shell reports a process the signal killed.
// The handler is installed with SA_RESETHAND: a second Ctrl-C kills the process at once (an atomic
// write it interrupts leaves a temporary file, which the next run of the same output removes).
//
// Test-only pause point: with GRADSCOPE_TEST_PAUSE_AT=step.N, the process stops itself (SIGSTOP) at the
// boundary before step N (N steps finished), so that a test can send it a signal there
// (tests/test_signals.cpp); GRADSCOPE_TEST_PAUSE_AT=sampling or drawing, at the first such safe point.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace gs::experiments {

// Installs the SIGINT and SIGTERM handlers.
void install_interrupt_handlers();

// The signal received (SIGINT, SIGTERM), or 0.
int interrupt_signal();

// "SIGINT", "SIGTERM".
std::string signal_name(int signal);

// The boundary before step `step` (0-based; `step` steps finished): the test pause point, then whether
// a signal asks the run to stop.
bool stop_requested(std::size_t step);

// What a run throws when it stops for a signal: caught by Experiment::main, which prints
// "PROGRAM: interrupted by SIGNAL at step STEP" + what, and exits 128 + signal.
struct Interrupted : std::runtime_error {
  Interrupted(int signal, std::size_t step, std::string what = "");
  // Outside the steps: "interrupted by SIGNAL " + where, e.g. "while sampling, ...".
  struct Phase {};
  Interrupted(int signal, Phase, std::string where);
  int signal;
  std::size_t step;   // steps finished
  std::string detail;  // after "at step N", e.g. " of 40; saved the checkpoint of step 20 to ck"
};

// Throws Interrupted at step `step` if stop_requested(step).
void stop_if_requested(std::size_t step);

// A phase without steps (sampling, drawing, writing): throws Interrupted(signal, Phase{}, where)
// if a signal has come. `phase` is also a test pause point: GRADSCOPE_TEST_PAUSE_AT=PHASE stops the
// process there (once) before it looks, as step.N does at a step boundary.
void stop_if_requested_in(const char* phase, const std::string& where);

}  // namespace gs::experiments
