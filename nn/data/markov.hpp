// A synthetic corpus from a random order-k Markov chain whose entropy rate is known exactly, so that
// the loss has a floor to compare with.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "nn/data/dataset.hpp"

namespace gs::nn {

// A Markov chain of order k over V tokens: the next token depends on the last k tokens (the context,
// one of V^k). Each context's next-token distribution is drawn from a Dirichlet(concentration)
// distribution -- small concentrations give peaked, low-entropy rows -- and mixed with a little of
// the uniform distribution, p = (1 - smoothing) * dirichlet + smoothing / V, so every transition is
// possible: the chain over contexts is then irreducible and aperiodic, with one stationary
// distribution.
struct MarkovOptions {
  std::size_t vocab = 64;
  std::size_t order = 2;
  double concentration = 0.1;
  double smoothing = 0.01;
  unsigned seed = 0;
};

class MarkovChain {
 public:
  explicit MarkovChain(const MarkovOptions& options);
  // A chain with given rows: transitions[c] is the next-token distribution of context c, where the
  // context (x_1, ..., x_k), oldest first, has index c = x_1 V^(k-1) + ... + x_k. Rows must sum to 1.
  MarkovChain(std::size_t vocab, std::size_t order, std::vector<std::vector<double>> transitions);

  std::size_t vocab() const { return vocab_; }
  std::size_t order() const { return order_; }
  std::size_t contexts() const { return transitions_.size(); }  // V^k
  const std::vector<double>& next(std::size_t context) const { return transitions_.at(context); }

  // pi(c): the stationary distribution over contexts, by power iteration
  //   pi_{n+1}(c') = sum over (c, y) with c' = (c without its oldest token, then y) of pi_n(c) P(y | c).
  const std::vector<double>& stationary() const { return stationary_; }
  // The entropy rate h = sum_c pi(c) H(P(. | c)) with H(p) = -sum_y p_y log p_y, in nats per token:
  // the lowest mean loss any model can reach once it has seen k tokens of context.
  double entropy_rate() const { return entropy_rate_; }
  // The lowest mean loss over the seq positions of a stationary window: position j (0-based) has seen
  // j + 1 tokens, and while j + 1 < k it can only reach H(x_{j+2} | x_1..x_{j+1}) = H_{j+2} - H_{j+1},
  // H_m being the entropy of m consecutive tokens (a marginal of pi). Slightly above entropy_rate().
  double window_floor(std::size_t seq) const;

  // n tokens of one run of the chain, its first k tokens drawn from pi (so the run is stationary).
  Tokens generate(std::size_t n, std::mt19937_64& rng) const;

 private:
  void solve();  // stationary distribution and entropy rate
  std::size_t vocab_, order_;
  std::vector<std::vector<double>> transitions_;
  std::vector<double> stationary_;
  double entropy_rate_ = 0.0;
};

// The chain's tokens printed as letters, digits and punctuation ("<123>" past 90 tokens); a training
// and a validation stream from independent runs of the chain.
Dataset markov_dataset(const MarkovChain& chain, std::size_t train_tokens, std::size_t validation_tokens,
                       unsigned seed);

// The Markov corpus the dump batch comes from: a chain with MarkovOptions{vocab, seed} (order 2,
// concentration 0.1) and a stream just long enough for (batch, seq) windows.
Dataset dump_corpus(std::size_t vocab, std::size_t batch, std::size_t seq, unsigned seed);
// The batch --dump and --graph use for `seed`: one (batch, seq) draw from `corpus`'s training split by
// an mt19937_64 seeded with `seed`. The measurements at init (gradflow, amplification) measure on it.
Batch dump_batch(const Dataset& corpus, std::size_t batch, std::size_t seq, unsigned seed);

}  // namespace gs::nn
