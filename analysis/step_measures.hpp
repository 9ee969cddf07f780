// What dynamics measures at each training step (experiments/dynamics.cpp explains the four links of
// Wang et al.'s chain that these numbers test): the gradient norm of each layer, the RMS of every
// residual-stream norm's input (its norm traces, nn/block.hpp), and the gain of the gradient through each.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "nn/data/dataset.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::analysis {

// The norm traces whose input is the residual stream, after a forward pass, as the blocks recorded them
// (NormTrace::on_stream): a norm in front of a sublayer (pre, peri) reads the stream itself, one after
// the residual add (post, deepnorm) reads the sum entering it; then ln_f on the last block's output.
// Norm none has none; out only ln_f (its block norms read the sublayers' outputs), peri not its
// ln_attn_out and ln_mlp_out.
std::vector<nn::NormTrace> stream_norm_traces(const nn::TransformerLM& model);

// Parameter groups: 0 the input embedding, 1..L the blocks, L+1 the output (ln_f, head).
std::size_t layer_group(const std::string& name, std::size_t layers);
std::vector<std::string> layer_names(std::size_t layers);  // "emb", "block0", ..., "out"

// |dL/dW| of each group: sqrt of the sum of the squared gradients of its parameters.
std::vector<double> layer_grad_norms(const nn::TransformerLM& model);

// The logits on the probe batch, with the model as it is now (no gradient; resets the current tape).
Array probe_logits(nn::TransformerLM& model, const nn::Batch& probe);

// Update groups: 0 the input embedding; for block i, 1 + 3i its attention (q, k, v, o), 2 + 3i its MLP
// (fc1, fc2), 3 + 3i the rest (its norms' gains and biases, and residual scalars: rezero, admin, peri);
// 3L + 1 the output (ln_f, head).
std::size_t update_group(const std::string& name, std::size_t layers);
std::vector<std::string> update_group_names(std::size_t layers);  // "emb", "b0.attn", "b0.mlp", "b0.rest", ..., "out"

// The value of every parameter, in named_parameters() order: the "before" of update_ratios.
std::vector<Array> parameter_values(const nn::TransformerLM& model);
// |W_now - W_before| / |W_before| of each update group (Frobenius norms over the group's parameters);
// NaN for a group whose |W_before| is 0.
std::vector<double> update_ratios(const std::vector<Array>& before, const nn::TransformerLM& model);

// The entropy (nats) of each head's attention weights in the last forward pass, -sum_s a_ts log a_ts,
// averaged over the batch and the query positions t (position t attends to t + 1 keys, so uniform
// attention gives the mean over t of log(t + 1)): [block 0 head 0, block 0 head 1, ..., block L-1 head H-1].
std::vector<double> attention_entropy(const nn::TransformerLM& model);

// The largest |attention logit| of each head in the last forward pass, max over the batch and the
// unmasked (query t, key s <= t) pairs of |q_t . k_s| / sqrt(dh), with q and k as the scores read them
// (after qk-norm): [block 0 head 0, ..., block L-1 head H-1]. Zhai et al. 2023's attention-logit growth.
std::vector<double> attention_logit_max(const nn::TransformerLM& model);

// Of the last forward's output logits z (B, T, V): log Z = logsumexp_v z per position, its mean and
// max over the positions, and sqrt(mean z^2) over every element (Wortsman et al. 2023's logit drift).
struct OutputLogits {
  double log_z_mean = NAN, log_z_max = NAN, rms = NAN;
};
OutputLogits output_logits(const nn::TransformerLM& model);

// ---- the early window: how far one update reaches (dynamics' early-window table) ----

// The largest singular value ||A||_2 of a 2-D array (m, n), by power iteration on A^T A:
// v <- A^T A v / |A^T A v|, with the estimate |A^T A v| / |A v| for the unit v (between |A v| and
// sigma_max, rising to sigma_max). Stops when the estimate changes by less than tol times itself
// between iterations, or after max_iterations; 0 for a zero matrix. Starts from `start` when it has n
// entries (a warm start: the last call's vector for a matrix that has changed little), else from a
// fixed vector; leaves the last v in it.
double spectral_norm(const Array& a, std::vector<double>& start, double tol = 1e-6, std::size_t max_iterations = 200);
double spectral_norm(const Array& a, double tol = 1e-6, std::size_t max_iterations = 200);  // from the fixed vector

// Spectral groups: 2i the 2-D weights of block i's attention (q, k, v, o), 2i + 1 those of its MLP
// (fc1, fc2).
std::vector<std::string> spectral_group_names(std::size_t layers);  // "b0.attn", "b0.mlp", "b1.attn", ...
// Per spectral group, the max over its 2-D matrices W of ||W_now - W_before||_2 / ||W_before||_2, the
// update measured in the operator norm that bounds how much it can change a layer's output for a
// given input: |dW x| <= ||dW||_2 |x|. `before` as for update_ratios; NaN for a group without a matrix.
// With `starts`, each matrix's power iterations (of W and of dW) start where the last call's ended:
// W changes little from one step to the next, and dW too under a momentum optimizer.
using SpectralStarts = std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>;  // name -> (W, dW)
std::vector<double> spectral_update_ratios(const std::vector<Array>& before, const nn::TransformerLM& model,
                                           SpectralStarts* starts = nullptr);

// The gradient of every parameter, in named_parameters() order (the g of linear_change).
std::vector<Array> parameter_grads(const nn::TransformerLM& model);
// The first-order prediction of the loss change of the step taken since `before`:
//   dL_lin = sum over parameters of g . d,  d = W_now - W_before,
// g the gradient at W_before (parameter_grads before the update). L(W + d) = L(W) + g . d + O(|d|^2).
double linear_change(const std::vector<Array>& grads, const std::vector<Array>& before, const nn::TransformerLM& model);
// The loss TransformerLM::loss trains (CE, plus z_loss * mean (log Z)^2 when z_loss > 0) on `batch`,
// with the model as it is now (no gradient; resets the current tape).
double loss_now(nn::TransformerLM& model, const nn::Batch& batch);
// The same loss, read from the last forward's trace (model.last) without another pass.
double last_loss(const nn::TransformerLM& model);

// What enters the head in the last forward (B, T, C): ln_f's output where the model has ln_f, else the
// last block's output (the top of the stream in post and deepnorm).
const Array& head_input(const nn::TransformerLM& model);
// The share of the variance of h (B, T, C) that the token at the same position explains: with the N = BT
// positions grouped by their token k (n_k positions, group mean m_k, overall mean m, both over C),
//   share = sum_k n_k |m_k - m|^2 / sum_n |h_n - m|^2   (between-token over total, summed over C).
// 1 when h is a function of the token alone; about (K - 1) / (N - 1) (K tokens present) when h does not
// depend on the token; NaN when the total is 0 (h constant).
double token_share(const Array& h, const IndexArray& ids);

// The logits on the probe batch (probe_logits) and the token share of its head input.
struct ProbePass {
  Array logits;
  double token_share = NAN;
};
ProbePass probe_pass(nn::TransformerLM& model, const nn::Batch& probe);

struct StepRecord {
  double loss = NAN, lr = NAN, grad_norm = NAN, output_move = NAN;
  std::vector<double> layer_grad;    // [emb, block 0..L-1, out]
  std::vector<double> ln_rms;        // per stream norm trace: sqrt(mean x^2) of its input
  std::vector<double> ln_gain;       // per stream norm trace: |dL/d in through the norm| / |dL/d out|
  std::vector<double> update_ratio;  // per update group: |delta W| / |W| of this step's update
  std::vector<double> att_entropy;   // per block and head, of this step's forward pass
  std::vector<double> att_logit_max; // per block and head, of this step's forward pass
  double log_z_mean = NAN, log_z_max = NAN, logit_rms = NAN;  // output_logits of this step's forward pass
  // Filled by the caller, not read_tape:
  std::vector<double> spectral_ratio;  // per spectral group: ||dW||_2 / ||W||_2 of this step's update
  double loss_change = NAN;  // L(W + d) - L(W) on this step's training batch, d this step's update
  double loss_linear = NAN;  // linear_change: g . d, its first-order prediction
  double token_share = NAN;  // token_share of the head input on the probe batch, before update t
  // Filled by read_collapse after the step's forward pass (before update t), one entry per block, from
  // block_collapse (analysis/collapse.hpp, which says where each is NaN: e.g. rezero's zero branches
  // at init, T = 1):
  std::vector<double> out_cosine;        // mean cosine between the positions of the block's output
  std::vector<double> out_top_share;     // share of that output's energy in its top singular direction;
                                         // NaN at the steps the caller skips (read_collapse's top_share)
  std::vector<double> attn_shared;       // share of the attention branch's energy shared by all positions
  std::vector<double> mlp_shared;        // the same of the MLP branch
  std::vector<double> attn_branch_skip;  // rms(attention branch) / rms(its skip)
  std::vector<double> mlp_branch_skip;   // rms(MLP branch) / rms(its skip)
  std::vector<double> dead_units;        // share of fc1's units that fire at no position of the batch
  std::vector<double> att_entropy_share; // attention entropy over its uniform maximum, mean over heads
};

// |dL/dx| of the part of x's gradient that came back through the norm alone (needs keep_contributions).
double through_norm(const nn::NormTrace& s);

// What the forward and backward pass of this step left on the tape: layer_grad, ln_rms, ln_gain,
// att_entropy, att_logit_max, log_z_mean, log_z_max, logit_rms.
void read_tape(const nn::TransformerLM& model, StepRecord& r);

// What block_collapse measures of this step's forward pass: out_cosine, ..., att_entropy_share, one
// entry per block. top_share false leaves out_top_share NaN (its eigendecompositions cost the most).
void read_collapse(const nn::TransformerLM& model, StepRecord& r, bool top_share = true);

}  // namespace gs::analysis
