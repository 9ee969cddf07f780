#include "nn/block.hpp"

#include <cmath>

#include "engine/engine.hpp"
#include "nn/residual_edges.hpp"

namespace gs::nn {
namespace {

// The add of a residual connection, sum = skip + branch, its inputs tagged skip_edge and branch_out_edge
// (nn/residual_edges.hpp): the stream's gradient splits by these tags, and the pictures draw both paths.
// detach-skip / detach-branch (Interventions) make it send zeros back along that input; a BranchControl
// scales the branch first (controlled_branch), inside the branch edge.
Var residual_add(const Var& skip, const Var& branch, const Interventions& iv, const BranchControl& control,
                 Site site = Site::current()) {
  Var sum = add(skip, controlled_branch(skip, branch, control, site), site);
  sum.mark_input(0, skip_edge, site).mark_input(1, branch_out_edge, site);
  if (iv.detach_skip) cut_gradient(sum, 0, site);
  if (iv.detach_branch) cut_gradient(sum, 1, site);
  return sum;
}

// alpha * x on the skip path (DeepNorm), its edge from x marked as the skip path's start.
Var scaled_skip(const Var& x, double alpha, Site site = Site::current()) {
  return mul(x, scalar_like(x, alpha, site), site).mark_input(0, skip_edge, site);
}

// omega (.) x on the skip path (Admin), omega [d] broadcast over (B, T); the edge from x is the skip's.
Var weighted_skip(const Var& x, const Parameter& omega, Site site = Site::current()) {
  return mul(x, Var(omega, site), site).mark_input(0, skip_edge, site);
}

// h + x, the skip of B2T's MLP sublayer (its own skip h and the block's bottom x), both edges skip.
Var b2t_skip(const Var& h, const Var& x, Site site = Site::current()) {
  return add(h, x, site).mark_input(0, skip_edge, site).mark_input(1, skip_edge, site);
}

// The population variance of every element of a (what Admin's reference code takes with np.var).
double variance(const Array& a) {
  double mean = 0.0;
  for (double v : a) mean += v;
  mean /= static_cast<double>(a.size());
  double var = 0.0;
  for (double v : a) var += (v - mean) * (v - mean);
  return var / static_cast<double>(a.size());
}

// This block's own placement: mixln's first K blocks are post blocks, the others pre blocks.
Placement block_placement(const ModelConfig& c, std::size_t index) {
  if (c.placement != Placement::mixln) return c.placement;
  return index < c.mixln_post_blocks() ? Placement::post : Placement::pre;
}

}  // namespace

Block::Block(const ModelConfig& config, std::size_t block_index, Initializer& init)
    : placement(block_placement(config, block_index)), norm(config.norm), residual(config.residual), index(block_index),
      attn(config.d_model, config.heads, init, config.qk_norm), mlp(config.d_model, config.ff(), init) {
  const std::size_t d = config.d_model;
  ln1 = make_norm(norm, d, config.dyt_alpha);
  ln2 = make_norm(norm, d, config.dyt_alpha);
  if (placement == Placement::peri) {
    ln_attn_out = make_norm(norm, d, config.dyt_alpha);
    ln_mlp_out = make_norm(norm, d, config.dyt_alpha);
  }
  if (residual == Residual::rezero) {
    rezero_attn = add_parameter("rezero_attn", zeros({1}));  // a_attn = 0: the block starts as the identity
    rezero_mlp = add_parameter("rezero_mlp", zeros({1}));    // a_mlp = 0
  }
  if (residual == Residual::admin) {
    // omega, one per feature and sublayer; ones until TransformerLM::profile_admin sets them.
    admin_attn = add_parameter("admin_attn", ones({d}));
    admin_mlp = add_parameter("admin_mlp", ones({d}));
  }
  if (residual == Residual::deepnorm) {
    // DeepNet (Wang et al. 2022), decoder-only with N layers: alpha = (2N)^(1/4), beta = (8N)^(-1/4).
    const double N = static_cast<double>(config.layers);
    alpha = std::pow(2.0 * N, 0.25);
    beta = std::pow(8.0 * N, -0.25);
    // The value path and the outputs of both sublayers start smaller; q and k keep their scale.
    mlp.fc1.weight.value() *= beta;
    mlp.fc2.weight.value() *= beta;
    attn.v.weight.value() *= beta;
    attn.o.weight.value() *= beta;
  }
  if (residual == Residual::lns) lns_scale = 1.0 / std::sqrt(static_cast<double>(index + 1));  // l = index + 1
  // Registration order is listing order: ln1, attn, ln_attn_out, ln2, mlp, ln_mlp_out; out registers
  // its norms after the sublayer they follow: attn, ln1, mlp, ln2.
  const bool after = placement == Placement::out;
  if (ln1 && !after) add_child("ln1", *ln1);
  add_child("attn", attn);
  if (ln1 && after) add_child("ln1", *ln1);
  if (ln_attn_out) add_child("ln_attn_out", *ln_attn_out);
  if (ln2 && !after) add_child("ln2", *ln2);
  add_child("mlp", mlp);
  if (ln2 && after) add_child("ln2", *ln2);
  if (ln_mlp_out) add_child("ln_mlp_out", *ln_mlp_out);
}

std::vector<NormLayer*> Block::norms() const {
  std::vector<NormLayer*> out;
  for (NormLayer* n : {ln1.get(), ln_attn_out.get(), ln2.get(), ln_mlp_out.get()})
    if (n) out.push_back(n);
  return out;
}

void Block::set_fused_norms(bool fused) {
  for (NormLayer* n : norms()) n->fused = fused;
  for (NormLayer* n : {attn.q_norm.get(), attn.k_norm.get()})  // qk-norm's, where present
    if (n) n->fused = fused;
}

// ---- the forward pass ----
//
// A block's forward is two residual connections, sum = skip + branch, one per sublayer; where the norms
// sit depends on the placement. BlockPass holds what every placement needs (the block, its tape, the
// call site and the trace being filled); post_family and pre_family are the two families of placements, each readable
// as the formula it computes (and each a frame of its own in a debugger).
namespace {

struct BlockPass {
  Block& b;
  Tape& tape;
  Site site;
  std::string p;  // "blocks.<index>.", the prefix of the block's labels
  BlockTrace t;

  // A sublayer (attn or mlp) run under its own name on the tape's module scope (Entry::scope
  // "...attn"), so the branch's entries are told apart from the residual adds and the skip path,
  // which stay in the block's scope.
  template <class Layer>
  Var sublayer(const char* name, Layer& layer, const Var& in) {
    ModuleScope scope(tape, name);
    return layer.forward(in, site);
  }

  // N(in) for the block's norm `n` under its name, recorded as a norm trace; the identity for a null
  // norm (norm none, or a placement without it); times 1/sqrt(l) for lns (in the norm's scope).
  Var normed(const char* name, NormLayer* n, const Var& in, bool on_stream) {
    if (!n) return in;
    ModuleScope scope(tape, name);
    Var y = n->forward(in, site);
    t.norms.push_back({y.entry(site).scope, in, y, on_stream});
    if (b.residual == Residual::lns) y = mul(y, scalar_like(y, b.lns_scale));  // y / sqrt(l)
    return y;
  }

  // The skip of a sublayer whose input is s: s, alpha s (deepnorm) or omega (.) s (admin).
  Var skip_of(const Var& s, Parameter& omega, const char* label) {
    if (b.residual == Residual::deepnorm) return scaled_skip(s, b.alpha).named(p + label);
    if (b.residual != Residual::admin) return s;
    if (b.admin_profile) omega.value().fill(b.admin_profile->ratio);  // omega_i = the ratio so far
    return weighted_skip(s, omega).named(p + label);
  }

  // Admin's profiling: the next sublayer's ratio is sqrt(Var(omega (.) s) + Var(F(s))).
  void profile(const Var& skip, const Var& branch) {
    if (b.admin_profile) b.admin_profile->ratio = std::sqrt(variance(skip.value()) + variance(branch.value()));
  }

  // ReZero's scalar a as a Var, made before the sublayer runs, so that its leaf precedes the sublayer's
  // entries on the tape (where `F(x) * a` has always put it); empty otherwise.
  Var gate(const Parameter& a) const { return b.residual == Residual::rezero ? Var(a) : Var(); }
  // The branch's scale: a F for rezero, F otherwise.
  Var gated(const Var& f, const Var& a) const { return b.residual == Residual::rezero ? f * a : f; }

  // post:  h = N1(skip(x) + Attn(x));   y = N2(skip(h) + MLP(h))
  // b2t:   h = N1(skip(x) + Attn(x));   y = N2((h + x) + MLP(h))
  // The norms sit after the adds, on the stream itself: the sum skip + branch is what they read.
  void post_family(const Var& x) {
    t.attn_in = x;
    t.attn_skip = skip_of(x, b.admin_attn, "attn_skip");
    t.attn_branch = sublayer("attn", b.attn, x);
    profile(t.attn_skip, t.attn_branch);
    t.attn_sum = residual_add(t.attn_skip, t.attn_branch, b.interventions, b.branch_control);
    t.mid = normed("ln1", b.ln1.get(), t.attn_sum, true);
    t.mlp_in = t.mid;
    t.mlp_skip = b.placement == Placement::b2t ? b2t_skip(t.mid, x).named(p + "mlp_skip")
                                               : skip_of(t.mid, b.admin_mlp, "mlp_skip");
    t.mlp_branch = sublayer("mlp", b.mlp, t.mid);
    profile(t.mlp_skip, t.mlp_branch);
    t.mlp_sum = residual_add(t.mlp_skip, t.mlp_branch, b.interventions, b.branch_control);
    t.out = normed("ln2", b.ln2.get(), t.mlp_sum, true);
  }

  // h = x + gate(No(Attn(Ni(x)))),  y = h + gate(No'(MLP(Ni'(h))))   (gate only for rezero), with
  //   pre:  Ni = ln1, No = identity          peri: Ni = ln1, No = ln_attn_out (and ln2, ln_mlp_out)
  //   out:  Ni = identity, No = ln1          (OLMo 2: the sublayer reads the stream unnormalized)
  // The stream itself is never normalized: h and y are the sums.
  void pre_family(const Var& x) {
    const bool out = b.placement == Placement::out;
    t.attn_in = normed("ln1", out ? nullptr : b.ln1.get(), x, true);
    t.attn_skip = x;
    const Var a_attn = gate(b.rezero_attn);
    const Var attn_f = sublayer("attn", b.attn, t.attn_in);
    t.attn_branch = gated(out ? normed("ln1", b.ln1.get(), attn_f, false)
                              : normed("ln_attn_out", b.ln_attn_out.get(), attn_f, false),
                          a_attn);
    t.attn_sum = residual_add(t.attn_skip, t.attn_branch, b.interventions, b.branch_control);
    t.mid = t.attn_sum;
    t.mlp_in = normed("ln2", out ? nullptr : b.ln2.get(), t.mid, true);
    t.mlp_skip = t.mid;
    const Var a_mlp = gate(b.rezero_mlp);
    const Var mlp_f = sublayer("mlp", b.mlp, t.mlp_in);
    t.mlp_branch = gated(out ? normed("ln2", b.ln2.get(), mlp_f, false)
                             : normed("ln_mlp_out", b.ln_mlp_out.get(), mlp_f, false),
                         a_mlp);
    t.mlp_sum = residual_add(t.mlp_skip, t.mlp_branch, b.interventions, b.branch_control);
    t.out = t.mlp_sum;
  }

  // Labels for the tape listing. A Var that is also the stream gets the stream's name.
  void label(const Var& x) {
    b.attn.last_att.named(p + "attn.att");
    if (t.attn_in.index() != x.index()) t.attn_in.named(p + "attn_in");
    t.attn_branch.named(p + "attn_branch");
    if (t.attn_sum.index() != t.mid.index()) t.attn_sum.named(p + "attn_sum");
    t.mid.named(p + "mid");
    if (t.mlp_in.index() != t.mid.index()) t.mlp_in.named(p + "mlp_in");
    t.mlp_branch.named(p + "mlp_branch");
    if (t.mlp_sum.index() != t.out.index()) t.mlp_sum.named(p + "mlp_sum");
    t.out.named(p + "out");
  }
};

}  // namespace

Var Block::forward(const Var& x, Site site) {
  const Shape xs = x.shape(site);
  if (xs.size() != 3 || xs[2] != attn.dim)
    fail("Block", site, "blocks." + std::to_string(index) + " needs x of shape (B, T, " +
                            std::to_string(attn.dim) + "), got " + shape_str(xs));
  BlockPass pass{*this, x.tape(site), site, "blocks." + std::to_string(index) + ".", {}};
  pass.t.input = x;  // (B, T, C)
  switch (placement) {
    case Placement::post:
    case Placement::b2t: pass.post_family(x); break;
    case Placement::pre:
    case Placement::peri:
    case Placement::out: pass.pre_family(x); break;
    case Placement::mixln:  // never: block_placement() makes each of mixln's blocks a post or a pre block
      fail("Block", site, "blocks." + std::to_string(index) + " has placement mixln, which only a model has");
  }
  pass.label(x);
  last = std::move(pass.t);
  return last.out;  // (B, T, C)
}

}  // namespace gs::nn
