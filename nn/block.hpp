// The residual block, built from ModelConfig's three axes (placement, norm, residual; docs/placements.md
// has each member beside its paper). Attn is CausalSelfAttention, MLP the feed-forward sublayer, N the
// block's norm (LayerNorm, RMSNorm, DyT, or the identity for norm none), x the block's input:
//   post:   h = N1(x + Attn(x));              y = N2(h + MLP(h))
//   pre:    h = x + Attn(N1(x));              y = h + MLP(N2(h))          (the model adds ln_f)
//   peri:   h = x + Na(Attn(N1(x)));          y = h + Nm(MLP(N2(h)))      (the model adds ln_f)
//   b2t:    h = N1(x + Attn(x));              y = N2(h + MLP(h) + x)      (no ln_f)
//   mixln:  blocks 0 .. K-1 are post blocks, blocks K .. L-1 pre blocks   (the model adds ln_f)
//   out:    h = x + N1(Attn(x));              y = h + N2(MLP(h))          (the model adds ln_f; OLMo 2)
// and the residual axis changes each sublayer's  sum = skip + branch:
//   none      skip = s,                 branch = F
//   deepnorm  skip = alpha s,           branch = F    alpha = (2N)^(1/4); at init fc1, fc2, v, o *= (8N)^(-1/4)
//   admin     skip = omega (.) s,       branch = F    omega [d] learnable, set by a profiling pass at init
//   rezero    skip = s,                 branch = a F  a [1] learnable, 0 at init
//   lns       every norm's output inside block l (l = index + 1) is multiplied by 1/sqrt(l)
// N is the number of layers of the model. Parameter names are in docs/placements.md.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/parameter.hpp"
#include "engine/var.hpp"
#include "nn/attention.hpp"
#include "nn/config.hpp"
#include "nn/init.hpp"
#include "nn/interventions.hpp"
#include "nn/mlp.hpp"
#include "nn/module.hpp"
#include "nn/norm.hpp"
#include "nn/residual_edges.hpp"

namespace gs::nn {

// A norm trace: one norm of the model (a block's ln1, ln_attn_out, ln2, ln_mlp_out, or the model's ln_f)
// as the last forward applied it, of whichever kind (LayerNorm, RMSNorm, DyT). Its tape entries carry
// its name as their scope, so the part of dL/d in that came back through the norm is what the entries
// of that scope sent into `in` (analysis::through_norm).
struct NormTrace {
  std::string name;        // its module path, also its entries' tape scope: "blocks.0.ln1", "ln_f"
  Var in, out;             // x and N(x) (B, T, C): the norm's own input and output (out before lns's 1/sqrt(l))
  bool on_stream = false;  // x is the residual stream or the sum entering it, not a sublayer's output:
                           // ln1 and ln2 of post, b2t, pre and peri, and ln_f
};

// Handles to the residual stream of a block's last forward, for experiments that separate the
// identity path from the branch path. Each sublayer adds  sum = skip + branch:
//   skip    the identity path: x itself, alpha * x (deepnorm), omega * x (admin), or for b2t's MLP
//           h + x (the sublayer's own skip h and the connection from the block's bottom x)
//   branch  what the sublayer adds: Attn(x), Attn(N1 x), Na(Attn(N1 x)), N1(Attn(x)) (out) or a_attn * Attn(x)
//   sum     the add; for pre, peri, out (and mixln's pre blocks) it is the stream itself (sum == mid / out),
//           for post, b2t (and mixln's post blocks) the stream is N(sum)
// The edges into each add are tagged skip_edge and branch_out_edge (nn/residual_edges.hpp).
// Labels on the tape (i = the block's index): blocks.i.attn_in, .attn_branch, .attn_skip (when the skip
// is an op of its own), .attn_sum (when it is not the stream), .mid, and the same with mlp_ ending in
// .out: the stream positions have the same names here, on the tape and in the stream experiment
// (blocks.i.mid, blocks.i.out). The block's input is not relabelled: it is the previous block's out,
// or the model's "emb".
struct BlockTrace {
  Var input;        // x (B, T, C)
  Var attn_in;      // what Attn saw: x (post, b2t, out), or N1(x) for pre and peri (times 1/sqrt(l) for lns)
  Var attn_skip;
  Var attn_branch;
  Var attn_sum;
  Var mid;          // h (B, T, C)
  Var mlp_in;       // what MLP saw: h (post, b2t, out), or N2(h) for pre and peri
  Var mlp_skip;
  Var mlp_branch;
  Var mlp_sum;
  Var out;          // y (B, T, C)
  std::vector<NormTrace> norms;  // the norm traces of this forward, in the order it applied them
};

// Admin's profiling pass (TransformerLM::profile_admin): the running ratio of Liu et al.'s reference
// code, handed from sublayer to sublayer in forward order (docs/placements.md#admin).
struct AdminProfile {
  double ratio = 1.0;
};

class Block : public Module {
 public:
  // `index` is the block's position (for labels, mixln and lns); config gives d, heads, d_ff, layers
  // and the three axes.
  Block(const ModelConfig& config, std::size_t index, Initializer& init);

  Var forward(const Var& x, Site site = Site::current());  // (B, T, C) -> (B, T, C)
  void set_fused_norms(bool fused);  // fused or composite norms (default fused), qk-norm's too
  std::vector<NormLayer*> norms() const;  // the block's norms that exist: ln1, ln_attn_out, ln2, ln_mlp_out

  Placement placement;  // this block's own placement: post, pre, peri, b2t or out (mixln's blocks are post or pre)
  Norm norm;
  Residual residual;
  std::size_t index;
  double alpha = 1.0;      // deepnorm's skip scale (2N)^(1/4); 1 otherwise
  double beta = 1.0;       // deepnorm's init scale (8N)^(-1/4) of fc1, fc2, v, o; 1 otherwise
  double lns_scale = 1.0;  // lns: 1/sqrt(index + 1); 1 otherwise

  // Children; a null pointer where the placement has no such norm or the norm is none.
  std::unique_ptr<NormLayer> ln1;          // every placement (out: on the attention's output)
  CausalSelfAttention attn;
  std::unique_ptr<NormLayer> ln_attn_out;  // peri only
  std::unique_ptr<NormLayer> ln2;          // every placement (out: on the MLP's output)
  MLP mlp;
  std::unique_ptr<NormLayer> ln_mlp_out;   // peri only
  Parameter rezero_attn;  // rezero only: shape [1], init 0
  Parameter rezero_mlp;   // rezero only: shape [1], init 0
  Parameter admin_attn;   // admin only: omega of the attention's skip, shape [d]
  Parameter admin_mlp;    // admin only: omega of the MLP's skip, shape [d]

  Interventions interventions;            // detach-skip / detach-branch act here (TransformerLM::set_interventions)
  BranchControl branch_control;           // scales each branch before its add (TransformerLM::set_branch_control)
  AdminProfile* admin_profile = nullptr;  // set only during TransformerLM::profile_admin

  BlockTrace last;  // the stream of the last forward (handles into the current tape)
};

}  // namespace gs::nn
