// Interventions on the backward pass: switches that change which way the gradient flows
// through the residual blocks, never the forward value. Set them on a built model with
// TransformerLM::set_interventions; they apply to every block (its norms and its residual adds), not
// to the final norm ln_f, which sits outside the blocks (and which Post-LN does not have).
//   ln-undo-gain     each norm's backward sends dx * sigma to its input, sigma = sqrt(var + eps) of that
//                    input per position (LayerNorm; for RMSNorm the rms): the 1/sigma factor removed
//   ln-detach-stats  each norm's statistics (LayerNorm's mean and variance, RMSNorm's mean square) are
//                    constants in the backward pass
//   detach-skip      each residual add sends no gradient back along its skip input (it sends zeros)
//   detach-branch    likewise along its branch input
//   freeze-ln        the norms' parameters (weight, bias; DyT's alpha too) have requires_grad false:
//                    no gradient is accumulated into them (their grad() stays 0, so they drop out of
//                    gradient norms and clipping) and the optimizers skip them
// docs/placements.md#interventions says which are refused with which norms, and why.
//
// BranchControl is the other kind: it changes the forward value of every residual add, so the
// backward is the true gradient of the changed model (gradient-checked like any layer). Set it with
// TransformerLM::set_branch_control; a training loop switches it on for the first steps only.
//   clamp c    each branch is scaled down, per position, to at most c times its skip's RMS:
//                sum = skip + s * branch,  s = min(1, c * rms(skip) / rms(branch)),
//              rms over the model dimension; s is part of the graph (its gradient flows). Branch
//              dominance (rms(branch) > c rms(skip)) cannot happen while it is on.
//   scale k    each branch is multiplied by k: sum = skip + k * branch (k > 1 imposes dominance)
#pragma once

#include <string>
#include <vector>

#include "engine/var.hpp"
#include "nn/config.hpp"

namespace gs::nn {

struct Interventions {
  bool ln_undo_gain = false;
  bool ln_detach_stats = false;
  bool detach_skip = false;
  bool detach_branch = false;
  bool freeze_ln = false;

  bool any() const { return ln_undo_gain || ln_detach_stats || detach_skip || detach_branch || freeze_ln; }
  bool operator==(const Interventions&) const = default;
};

struct BranchControl {
  double clamp = 0.0;  // c > 0: clamp on; 0: off
  double scale = 1.0;  // k

  bool active() const { return clamp > 0.0 || scale != 1.0; }
  bool operator==(const BranchControl&) const = default;
};

// "ln-undo-gain", "ln-detach-stats", "detach-skip", "detach-branch", "freeze-ln".
const std::vector<std::string>& intervention_names();
// A comma-separated list of those names ("" or "none": no intervention); throws gs::Error naming the
// unknown name and listing the valid ones.
Interventions parse_interventions(const std::string& list);
// The names that are on, comma-separated in the order above, or "none".
std::string to_string(const Interventions& interventions);

// "" if these interventions apply to a model of this config; otherwise why not, in one line.
std::string refusal(const Interventions& interventions, const ModelConfig& config);

// Makes the op that produced `v` send zeros back to its input number `input` (whatever its backward
// computes for it); its value and its other inputs' gradients are unchanged. Returns v.
Var cut_gradient(const Var& v, std::size_t input, Site site = Site::current());

// The branch as BranchControl makes it: k * branch, then (clamp c > 0) times s per position, as
// above. Shapes (..., C); returns branch itself when control is not active.
Var controlled_branch(const Var& skip, const Var& branch, const BranchControl& control, Site site = Site::current());

}  // namespace gs::nn
