#include "experiments/common/step_measures.hpp"

#include <algorithm>
#include <cmath>

namespace gs::experiments {

double rms(const Array& x) { return norm(x) / std::sqrt(static_cast<double>(std::max<std::size_t>(1, x.size()))); }

// The LNs whose input is the residual stream (see the header), after a forward pass.
std::vector<LnSite> ln_sites(const nn::TransformerLM& model) {
  std::vector<LnSite> sites;
  for (const auto& block : model.blocks) {
    const nn::BlockTrace& t = block->last;
    std::string b = "b";  // (s += ..., not "b" + ...: GCC 12 warns falsely, -Wrestrict)
    b += std::to_string(block->index);
    if (!block->ln1) continue;  // norm none: no norm reads the stream
    if (block->placement == nn::Placement::post || block->placement == nn::Placement::b2t) {
      sites.push_back({b + ".ln1", t.attn_sum, t.mid});
      sites.push_back({b + ".ln2", t.mlp_sum, t.out});
    } else {  // pre and peri (mixln's blocks are post or pre)
      sites.push_back({b + ".ln1", t.input, t.attn_in});
      sites.push_back({b + ".ln2", t.mid, t.mlp_in});
    }
  }
  if (model.has_final_norm()) sites.push_back({"ln_f", model.blocks.back()->last.out, model.last.final_norm});
  return sites;
}

// Parameter groups: 0 the input embedding, 1..L the blocks, L+1 the output (ln_f, head).
std::size_t layer_group(const std::string& name, std::size_t layers) {
  if (name.rfind("tok_emb.", 0) == 0 || name.rfind("pos_emb.", 0) == 0) return 0;
  if (name.rfind("blocks.", 0) == 0) return 1 + std::stoul(name.substr(7));
  return layers + 1;
}

std::vector<std::string> layer_names(std::size_t layers) {
  std::vector<std::string> names = {"emb"};
  for (std::size_t i = 0; i < layers; ++i) names.push_back(std::string("block") += std::to_string(i));
  names.push_back("out");
  return names;
}

// |dL/dW| of each group: sqrt of the sum of the squared gradients of its parameters.
std::vector<double> layer_grad_norms(const nn::TransformerLM& model) {
  const std::size_t L = model.config.layers;
  std::vector<double> sq(L + 2, 0.0);
  for (const nn::NamedParameter& p : model.named_parameters()) {
    const double n = norm(p.parameter.grad());
    sq[layer_group(p.name, L)] += n * n;
  }
  for (double& s : sq) s = std::sqrt(s);
  return sq;
}

// The logits on the probe batch, with the model as it is now.
Array probe_logits(nn::TransformerLM& model, const nn::Batch& probe) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  tape.reset();
  Array logits = model.logits(probe.inputs).value();
  tape.reset();
  return logits;
}

// |dL/dx| of the part of x's gradient that came back through the LN alone: in pre and peri the
// stream x also gets gradient through the skip path, which is not the LN's doing. Needs the tape's
// keep_contributions (the fused LN is one tape entry, so its output's index is the sender).
double through_ln(const LnSite& s) {
  double sq = 0.0;
  for (const ContributionInfo& c : contributions(s.in))
    if (c.from == s.out.index()) sq += c.norm * c.norm;
  return std::sqrt(sq);
}

// What the forward and backward pass of this step left on the tape.
void read_tape(const nn::TransformerLM& model, StepRecord& r) {
  r.layer_grad = layer_grad_norms(model);
  for (const LnSite& s : ln_sites(model)) {
    r.ln_rms.push_back(rms(s.in.value()));
    r.ln_gain.push_back(through_ln(s) / norm(s.out.grad()));
  }
}

}  // namespace gs::experiments
