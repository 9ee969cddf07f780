#include "nn/interventions.hpp"

#include "engine/engine.hpp"

namespace gs::nn {

const std::vector<std::string>& intervention_names() {
  static const std::vector<std::string> names = {"ln-undo-gain", "ln-detach-stats", "detach-skip", "detach-branch",
                                                 "freeze-ln"};
  return names;
}

namespace {

// The switch of name i of intervention_names().
bool& flag(Interventions& iv, std::size_t i) {
  bool* flags[] = {&iv.ln_undo_gain, &iv.ln_detach_stats, &iv.detach_skip, &iv.detach_branch, &iv.freeze_ln};
  return *flags[i];
}

}  // namespace

Interventions parse_interventions(const std::string& list) {
  Interventions iv;
  if (list.empty() || list == "none") return iv;
  if (("," + list + ",").find(",none,") != std::string::npos)
    throw Error("intervene: '" + list + "': 'none' means no intervention; give it alone, or leave it out of the list");
  std::string name;
  auto take = [&] {
    const std::vector<std::string>& names = intervention_names();
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) {
        flag(iv, i) = true;
        return;
      }
    std::string valid;
    for (const std::string& n : names) valid += (valid.empty() ? "" : ", ") + n;
    throw Error("intervene: unknown intervention '" + name + "' (valid: " + valid + ")");
  };
  for (char c : list) {
    if (c == ',') {
      take();
      name.clear();
    } else {
      name += c;
    }
  }
  take();
  return iv;
}

std::string to_string(const Interventions& interventions) {
  Interventions iv = interventions;
  std::string out;
  for (std::size_t i = 0; i < intervention_names().size(); ++i)
    if (flag(iv, i)) out += (out.empty() ? "" : ",") + intervention_names()[i];
  return out.empty() ? "none" : out;
}

std::string refusal(const Interventions& iv, const ModelConfig& config) {
  const bool ln_grad = iv.ln_undo_gain || iv.ln_detach_stats;
  const std::string which = iv.ln_undo_gain ? "ln-undo-gain" : "ln-detach-stats";
  const NormKind& norm = kind_of(config.norm);
  if (ln_grad && config.norm == Norm::none) return which + " changes the norms' backward, and with norm none there is none";
  if (ln_grad && !norm.has_statistics) {
    std::string with;  // the norms that have statistics: "layer or rms"
    for (const NormKind& k : norm_kinds())
      if (k.has_statistics) with += (with.empty() ? "" : " or ") + k.name;
    return which + " acts on a norm's statistics (sigma, mean, variance), and " + norm.title +
           " computes none: use " + with;
  }
  if (iv.freeze_ln && config.norm == Norm::none) return "freeze-ln freezes the norms' parameters, and with norm none there is none";
  if (iv.detach_skip && iv.detach_branch)
    return "detach-skip with detach-branch cuts both inputs of every residual add: no gradient would reach any block";
  return "";
}

Var cut_gradient(const Var& v, std::size_t input, Site site) {
  Entry& e = v.tape(site).checked_entry(v.index(), v.generation(), "cut_gradient", site);
  if (input >= e.inputs.size())
    fail("cut_gradient", site, "op " + std::string(e.op) + " has " + std::to_string(e.inputs.size()) +
                                   " inputs, so there is no input " + std::to_string(input));
  if (!e.backward) return v;  // no gradient flows through this op at all
  e.backward = [backward = std::move(e.backward), input](const BackwardArgs& g) -> Grads {
    Grads grads = backward(g);
    if (g.needs(input)) grads[input] = xt::zeros_like(g.in(input));  // the cut: zeros, same shape as the input
    return grads;
  };
  return v;
}

Var controlled_branch(const Var& skip, const Var& branch, const BranchControl& control, Site site) {
  if (!control.active()) return branch;
  Var f = control.scale == 1.0 ? branch : mul(branch, scalar_like(branch, control.scale, site), site);
  if (control.clamp <= 0.0) return f;
  // rms over the model dimension, per position: (..., 1)
  auto rms = [&](const Var& v) { return sqrt(mean(mul(v, v, site), {-1}, true, site) + 1e-12, site); };
  const Var ratio = div(mul(rms(skip), scalar_like(skip, control.clamp, site), site), rms(f), site);  // (..., 1)
  const Var s = masked_fill(ratio, ratio.value() >= 1.0, 1.0, site);  // min(1, ratio), (..., 1)
  return mul(f, s, site);  // (..., C) * (..., 1)
}

}  // namespace gs::nn
