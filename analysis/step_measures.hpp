// What dynamics measures at each training step (experiments/dynamics.cpp explains the four links of
// Wang et al.'s chain that these numbers test): the gradient norm of each layer, the RMS of every
// residual-stream norm's input (its norm sites, nn/block.hpp), and the gain of the gradient through each.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "nn/data/dataset.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::analysis {

// The norm sites whose input is the residual stream, after a forward pass, as the blocks recorded them
// (NormSite::on_stream): a norm in front of a sublayer (pre, peri) reads the stream itself, one after
// the residual add (post, deepnorm) reads the sum entering it; then ln_f on the last block's output.
// Norm none has none; out only ln_f (its block norms read the sublayers' outputs), peri not its
// ln_attn_out and ln_mlp_out.
std::vector<nn::NormSite> stream_norm_sites(const nn::TransformerLM& model);

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

struct StepRecord {
  double loss = NAN, lr = NAN, grad_norm = NAN, output_move = NAN;
  std::vector<double> layer_grad;    // [emb, block 0..L-1, out]
  std::vector<double> ln_rms;        // per stream norm site: sqrt(mean x^2) of its input
  std::vector<double> ln_gain;       // per stream norm site: |dL/d in through the norm| / |dL/d out|
  std::vector<double> update_ratio;  // per update group: |delta W| / |W| of this step's update
  std::vector<double> att_entropy;   // per block and head, of this step's forward pass
  std::vector<double> att_logit_max; // per block and head, of this step's forward pass
  double log_z_mean = NAN, log_z_max = NAN, logit_rms = NAN;  // output_logits of this step's forward pass
};

// |dL/dx| of the part of x's gradient that came back through the norm alone (needs keep_contributions).
double through_norm(const nn::NormSite& s);

// What the forward and backward pass of this step left on the tape: layer_grad, ln_rms, ln_gain,
// att_entropy, att_logit_max, log_z_mean, log_z_max, logit_rms.
void read_tape(const nn::TransformerLM& model, StepRecord& r);

}  // namespace gs::analysis
