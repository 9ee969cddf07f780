// The model's shape and its residual block, what every binary's model flags fill in. The block is
// chosen on three axes (docs/placements.md has each member's formula, paper and code):
//   placement  where the norms sit:            post, pre, peri (alias sandwich), mixln, b2t, out
//   norm       which norm sits there:          layer (LayerNorm), rms (RMSNorm), dyt (Dynamic Tanh), none
//   residual   how the residual is weighted:   none, deepnorm, admin, rezero, lns (LayerNorm Scaling)
// The five placements gradscope had before the axes are presets of them, with the same numbers:
//   post = post/layer/none, pre = pre/layer/none, peri = peri/layer/none,
//   deepnorm = post/layer/deepnorm, rezero = pre/none/rezero.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gs::nn {

enum class Placement { post, pre, peri, mixln, b2t, out };
enum class Norm { layer, rms, dyt, none };
enum class Residual { none, deepnorm, admin, rezero, lns };
enum class Init { xavier, gpt2 };  // Xavier-uniform linear weights, or GPT-2's N(0, 0.02)
// QK-norm: each head's query and key vectors normalized over their d_head features before q k^T
// (Dehghani et al. 2023; OLMo 2): none, layer (LayerNorm, weight and bias) or rms (RMSNorm, weight).
enum class QkNorm { none, layer, rms };

// Each axis's names. parse_* throws gs::Error naming the string and listing the valid names.
std::string to_string(Placement placement);  // "post", "pre", "peri", "mixln", "b2t", "out"
Placement parse_placement(const std::string& name);  // also "sandwich" (= peri)
std::string to_string(Norm norm);            // "layer", "rms", "dyt", "none"
Norm parse_norm(const std::string& name);
std::string to_string(Residual residual);    // "none", "deepnorm", "admin", "rezero", "lns"
Residual parse_residual(const std::string& name);
std::string to_string(Init init);            // "xavier", "gpt2"
Init parse_init(const std::string& name);
std::string to_string(QkNorm qk_norm);       // "none", "layer", "rms"
QkNorm parse_qk_norm(const std::string& name);
// The names parse_norm, parse_residual, parse_init and parse_qk_norm take, in the enum's order.
const std::vector<std::string>& norm_names();
const std::vector<std::string>& residual_names();
const std::vector<std::string>& init_names();
const std::vector<std::string>& qk_norm_names();

struct ModelConfig {
  std::size_t vocab = 64;
  std::size_t context = 32;   // the longest sequence (rows of the positional embedding)
  std::size_t d_model = 64;
  std::size_t heads = 4;
  std::size_t layers = 2;
  std::size_t d_ff = 0;       // 0 means 4 * d_model
  Placement placement = Placement::pre;
  Norm norm = Norm::layer;
  Residual residual = Residual::none;
  std::optional<std::size_t> mixln_post = std::nullopt;  // mixln: K, the number of Post-LN blocks; unset: L/4 rounded half up
  double dyt_alpha = 0.5;     // dyt: the initial value of every DyT's alpha
  Init init = Init::xavier;
  QkNorm qk_norm = QkNorm::none;  // per-head norms of q and k in every attention (nn/attention.hpp)
  unsigned seed = 0;          // initialisation seed

  std::size_t ff() const { return d_ff == 0 ? 4 * d_model : d_ff; }
  // mixln's K: mixln_post if set, else floor(L/4 + 1/2) (L = 6 gives 2, L = 10 gives 3).
  std::size_t mixln_post_blocks() const { return mixln_post ? *mixln_post : (layers + 2) / 4; }
};

// The presets, in print order: "post", "pre", "peri", "deepnorm", "rezero".
const std::vector<std::string>& placement_presets();

// Sets config's placement, norm and residual from `spec`: a preset ("deepnorm"), "sandwich", or a
// triple "P/N/R" whose omitted parts default to layer and none ("pre/rms" = pre/rms/none, "mixln" =
// mixln/layer/none). Throws gs::Error naming the spec and listing the valid names, or, for a
// combination that is refused (docs/placements.md), naming it and giving the reason. Leaves config
// unchanged when it throws.
void apply_placement(ModelConfig& config, const std::string& spec);

// The preset's name when the triple is a preset, else the canonical triple "P/N/R" ("pre/rms/none").
std::string placement_name(const ModelConfig& config);

// "" if the triple is a combination the model builds; otherwise why not, in one line (e.g. "lns
// scales the output of each norm, and with norm none there is none"). Also checks mixln's K against
// layers and dyt_alpha.
std::string refusal(const ModelConfig& config);

}  // namespace gs::nn
