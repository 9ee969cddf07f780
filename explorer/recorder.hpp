// Records a training run for the explorer page, step by step, from the model and its tape.
//
// Each step, after the forward and backward pass and before the optimizer's update, call
// record_pass; after the update, record_update. At the snapshot steps the recorder keeps the graph's
// numbers (tape_view.hpp); at every step it adds the points of the standard charts:
//   loss          the training batch's loss
//   grad_norm     |dL/dW| per module group (blocks.0, blocks.1, ..., tok_emb, pos_emb, ln_f, head)
//   ln_input_rms  sqrt(mean x^2) of the input x of every norm trace of the model (nn/block.hpp NormTrace:
//                 each block's norms and ln_f, of any kind: LayerNorm, RMSNorm, DyT), named by its scope
//   ln_gain       |dL/dx through the norm| / |dL/dy| of the same norm traces (analysis::through_norm)
//   fork_skip, fork_branch   |skip part| and |branch part| of the gradient at every residual fork
//   update_ratio  |delta W| / |W| per module group, of the update that followed the pass
// and at a snapshot, every node's gradient split by path length (one graded sweep, read_paths).
// Any other named series goes in through run().add_point. The tape needs keep_contributions on
// during backward at every step (ln_gain and the forks read the contributions).
//
// Steps count updates: step s is the pass after s updates (step 0: at initialization), and
// update_ratio at step s is the update that followed pass s.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "explorer/page.hpp"
#include "nn/transformer_lm.hpp"

namespace gs {
class Tape;
}

namespace gs::explorer {

// 0, 1, 2, 3, 5, 8, 13, 20, 30, 50, 80, 130, 200, 300: dense at the start, where Post-LN's trouble
// begins, spanning the first few hundred steps.
std::vector<std::size_t> default_snapshot_steps();
// "0,1,2,5,10" or "0-10" ranges, or "0:300:10" (start:stop:stride, stop included) -> sorted, each once.
// Throws gs::Error naming `flag` and the bad piece.
std::vector<std::size_t> parse_steps(const std::string& text, const std::string& flag = "--snapshot-steps");

// The module group a parameter belongs to: the first component of its dotted name, with the number
// after it if there is one: "blocks.3.attn.q.weight" -> "blocks.3", "tok_emb.weight" -> "tok_emb".
std::string module_group(const std::string& parameter_name);

// The collapse charts of a run (analysis/collapse.hpp's measures, one series per block "blocks.i", the
// top block last): each block output's mean cosine between positions, its dead FFN units, its attention
// entropy over the maximum. A NaN (a measure a placement leaves undefined) is stored as such.
void chart_collapse(Run& run, std::size_t step, const std::vector<double>& out_cosine,
                    const std::vector<double>& dead_units, const std::vector<double>& att_entropy_share);

struct RecorderOptions {
  std::vector<std::size_t> snapshot_steps = default_snapshot_steps();
  std::size_t max_graph_entries = 200;  // above this the run has no graph, only charts (a 4-layer model has 125)
  std::size_t bins = 16;                // histogram bins of each value and gradient
  bool draw = true;                     // run Graphviz's dot for the SVG (off: no graph, noted)
  bool paths = true;                    // at each snapshot, split every node's gradient by path length (read_paths)
};

class RunRecorder {
 public:
  RunRecorder(std::string name, const nn::TransformerLM& model, RecorderOptions options = {});

  bool is_snapshot(std::size_t step) const;
  // The pass of step `step` is on `tape` (backward done, keep_contributions on).
  void record_pass(std::size_t step, const Tape& tape, double loss);
  // The optimizer has updated the parameters after the pass of step `step`.
  void record_update(std::size_t step);

  Run& run() { return run_; }
  Run take() { return std::move(run_); }

 private:
  // The steps of record_pass, in its order.
  void record_grad_norms(std::size_t step);  // grad_norm, and the values update_ratio compares with
  void record_norm_traces(std::size_t step);  // ln_input_rms, ln_gain
  void record_graph(std::size_t step, const Tape& tape, double loss);  // the SVG once, a snapshot
  void record_forks(std::size_t step, const Tape& tape);  // fork_skip, fork_branch

  const nn::TransformerLM& model_;
  RecorderOptions options_;
  Run run_;
  std::vector<std::string> groups_;          // per parameter (model_.named_parameters() order)
  std::vector<Array> before_;                // the parameters' values at the last record_pass
  std::optional<GraphView> view_;            // the graph's structure, read at the first pass
};

}  // namespace gs::explorer
