#include "nn/block.hpp"

#include <cmath>

#include "engine/engine.hpp"

namespace gs::nn {
namespace {

// The add of a residual connection, sum = skip + branch, with its inputs marked on the tape
// (EdgeRole): tools/inspect splits the stream's gradient by these marks and draws the two paths apart.
Var residual_add(const Var& skip, const Var& branch, Site site = Site::current()) {
  return add(skip, branch, site).mark_input(0, EdgeRole::skip, site).mark_input(1, EdgeRole::branch, site);
}

// alpha * x on the skip path (DeepNorm), its edge from x marked as the skip path's start.
Var scaled_skip(const Var& x, double alpha, Site site = Site::current()) {
  return mul(x, scalar_like(x, alpha, site), site).mark_input(0, EdgeRole::skip, site);
}

}  // namespace

Block::Block(const ModelConfig& config, std::size_t block_index, Initializer& init)
    : placement(config.placement), index(block_index), attn(config.d_model, config.heads, init),
      mlp(config.d_model, config.ff(), init) {
  const std::size_t d = config.d_model;
  const bool has_ln = placement != Placement::rezero;
  if (has_ln) ln1 = std::make_unique<LayerNorm>(d);
  if (has_ln) ln2 = std::make_unique<LayerNorm>(d);
  if (placement == Placement::peri) {
    ln_attn_out = std::make_unique<LayerNorm>(d);
    ln_mlp_out = std::make_unique<LayerNorm>(d);
  }
  if (placement == Placement::rezero) {
    rezero_attn = add_parameter("rezero_attn", zeros({1}));  // a_attn = 0: the block starts as the identity
    rezero_mlp = add_parameter("rezero_mlp", zeros({1}));    // a_mlp = 0
  }
  if (placement == Placement::deepnorm) {
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
  // Registration order is listing order: ln1, attn, ln_attn_out, ln2, mlp, ln_mlp_out.
  if (ln1) add_child("ln1", *ln1);
  add_child("attn", attn);
  if (ln_attn_out) add_child("ln_attn_out", *ln_attn_out);
  if (ln2) add_child("ln2", *ln2);
  add_child("mlp", mlp);
  if (ln_mlp_out) add_child("ln_mlp_out", *ln_mlp_out);
}

void Block::set_fused_norms(bool fused) {
  for (LayerNorm* ln : {ln1.get(), ln2.get(), ln_attn_out.get(), ln_mlp_out.get()})
    if (ln) ln->fused = fused;
}

Var Block::forward(const Var& x, Site site) {
  const Shape xs = x.shape(site);
  if (xs.size() != 3 || xs[2] != attn.dim)
    fail("Block", site, "blocks." + std::to_string(index) + " needs x of shape (B, T, " +
                            std::to_string(attn.dim) + "), got " + shape_str(xs));
  const std::string p = "blocks." + std::to_string(index) + ".";
  // Each sublayer runs under its own name on the tape's module scope (Entry::scope "...attn", "...ln1"),
  // so the branch's entries are told apart from the residual adds and the skip path, which stay here.
  Tape& tape = x.tape(site);
  auto run = [&](const char* name, auto& layer, const Var& in) {
    ModuleScope scope(tape, name);
    return layer.forward(in, site);
  };
  BlockTrace t;
  t.input = x;  // (B, T, C)

  switch (placement) {
    case Placement::post: {
      // h = LN1(x + Attn(x))
      t.attn_in = x;
      t.attn_skip = x;
      t.attn_branch = run("attn", attn, x);
      t.attn_sum = residual_add(t.attn_skip, t.attn_branch);
      t.mid = run("ln1", *ln1, t.attn_sum);
      // y = LN2(h + MLP(h))
      t.mlp_in = t.mid;
      t.mlp_skip = t.mid;
      t.mlp_branch = run("mlp", mlp, t.mid);
      t.mlp_sum = residual_add(t.mlp_skip, t.mlp_branch);
      t.out = run("ln2", *ln2, t.mlp_sum);
      break;
    }
    case Placement::pre: {
      // h = x + Attn(LN1(x))
      t.attn_in = run("ln1", *ln1, x);
      t.attn_skip = x;
      t.attn_branch = run("attn", attn, t.attn_in);
      t.attn_sum = residual_add(t.attn_skip, t.attn_branch);
      t.mid = t.attn_sum;
      // y = h + MLP(LN2(h))
      t.mlp_in = run("ln2", *ln2, t.mid);
      t.mlp_skip = t.mid;
      t.mlp_branch = run("mlp", mlp, t.mlp_in);
      t.mlp_sum = residual_add(t.mlp_skip, t.mlp_branch);
      t.out = t.mlp_sum;
      break;
    }
    case Placement::peri: {
      // h = x + LNa_out(Attn(LN1(x)))
      t.attn_in = run("ln1", *ln1, x);
      t.attn_skip = x;
      t.attn_branch = run("ln_attn_out", *ln_attn_out, run("attn", attn, t.attn_in));
      t.attn_sum = residual_add(t.attn_skip, t.attn_branch);
      t.mid = t.attn_sum;
      // y = h + LNm_out(MLP(LN2(h)))
      t.mlp_in = run("ln2", *ln2, t.mid);
      t.mlp_skip = t.mid;
      t.mlp_branch = run("ln_mlp_out", *ln_mlp_out, run("mlp", mlp, t.mlp_in));
      t.mlp_sum = residual_add(t.mlp_skip, t.mlp_branch);
      t.out = t.mlp_sum;
      break;
    }
    case Placement::deepnorm: {
      // h = LN1(alpha * x + Attn(x))
      t.attn_in = x;
      t.attn_skip = scaled_skip(x, alpha).named(p + "attn_skip");
      t.attn_branch = run("attn", attn, x);
      t.attn_sum = residual_add(t.attn_skip, t.attn_branch);
      t.mid = run("ln1", *ln1, t.attn_sum);
      // y = LN2(alpha * h + MLP(h))
      t.mlp_in = t.mid;
      t.mlp_skip = scaled_skip(t.mid, alpha).named(p + "mlp_skip");
      t.mlp_branch = run("mlp", mlp, t.mid);
      t.mlp_sum = residual_add(t.mlp_skip, t.mlp_branch);
      t.out = run("ln2", *ln2, t.mlp_sum);
      break;
    }
    case Placement::rezero: {
      // h = x + a_attn * Attn(x)
      t.attn_in = x;
      t.attn_skip = x;
      t.attn_branch = run("attn", attn, x) * rezero_attn;
      t.attn_sum = residual_add(t.attn_skip, t.attn_branch);
      t.mid = t.attn_sum;
      // y = h + a_mlp * MLP(h)
      t.mlp_in = t.mid;
      t.mlp_skip = t.mid;
      t.mlp_branch = run("mlp", mlp, t.mid) * rezero_mlp;
      t.mlp_sum = residual_add(t.mlp_skip, t.mlp_branch);
      t.out = t.mlp_sum;
      break;
    }
  }

  // Labels for the tape listing. A Var that is also the stream gets the stream's name.
  attn.last_att.named(p + "attn.att");
  if (t.attn_in.index() != x.index()) t.attn_in.named(p + "attn_in");
  t.attn_branch.named(p + "attn_branch");
  if (t.attn_sum.index() != t.mid.index()) t.attn_sum.named(p + "attn_sum");
  t.mid.named(p + "mid");
  if (t.mlp_in.index() != t.mid.index()) t.mlp_in.named(p + "mlp_in");
  t.mlp_branch.named(p + "mlp_branch");
  if (t.mlp_sum.index() != t.out.index()) t.mlp_sum.named(p + "mlp_sum");
  t.out.named(p + "out");
  last = t;
  return t.out;  // (B, T, C)
}

}  // namespace gs::nn
