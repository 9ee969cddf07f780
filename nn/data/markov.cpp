#include "nn/data/markov.hpp"

#include <cmath>

#include "engine/error.hpp"

namespace gs::nn {

// ---- MarkovChain ----

namespace {

// H(p) = -sum p log p, in nats (0 log 0 = 0).
double entropy(const std::vector<double>& p) {
  double h = 0.0;
  for (double q : p)
    if (q > 0.0) h -= q * std::log(q);
  return h;
}

std::size_t power(std::size_t base, std::size_t exponent) {
  std::size_t r = 1;
  for (std::size_t i = 0; i < exponent; ++i) {
    if (r > (std::size_t{1} << 22) / base)
      throw Error("markov: vocab^order is too large (" + std::to_string(base) + "^" + std::to_string(exponent) +
                  " contexts; at most 4M)");
    r *= base;
  }
  return r;
}

}  // namespace

MarkovChain::MarkovChain(const MarkovOptions& o) : vocab_(o.vocab), order_(o.order) {
  if (o.vocab < 2) throw Error("markov: vocab must be at least 2");
  // Written so that NaN fails too (every comparison with NaN is false).
  if (!(o.concentration > 0.0 && std::isfinite(o.concentration)))
    throw Error("markov: concentration must be a positive finite number, not " + std::to_string(o.concentration));
  if (!(o.smoothing >= 0.0 && o.smoothing <= 1.0))
    throw Error("markov: smoothing must be in [0, 1], not " + std::to_string(o.smoothing));
  if (power(o.vocab, o.order) * o.vocab > (std::size_t{1} << 24))
    throw Error("markov: vocab^(order+1) transition probabilities are too many to store (at most 16M)");
  std::mt19937_64 rng(o.seed);
  // Dirichlet(a) = independent Gamma(a, 1) draws, normalised.
  std::gamma_distribution<double> gamma(o.concentration, 1.0);
  transitions_.assign(power(o.vocab, o.order), std::vector<double>(o.vocab));
  for (std::vector<double>& row : transitions_) {
    double sum = 0.0;
    for (double& p : row) sum += p = gamma(rng);
    if (sum == 0.0) {  // every draw underflowed (tiny concentrations): put the mass on one token
      row[std::uniform_int_distribution<std::size_t>(0, o.vocab - 1)(rng)] = sum = 1.0;
    }
    for (double& p : row) p = (1.0 - o.smoothing) * p / sum + o.smoothing / static_cast<double>(o.vocab);
  }
  solve();
}

MarkovChain::MarkovChain(std::size_t vocab, std::size_t order, std::vector<std::vector<double>> transitions)
    : vocab_(vocab), order_(order), transitions_(std::move(transitions)) {
  if (transitions_.size() != power(vocab, order))
    throw Error("markov: " + std::to_string(transitions_.size()) + " rows given, vocab^order = " +
                std::to_string(power(vocab, order)) + " needed");
  for (std::size_t c = 0; c < transitions_.size(); ++c) {
    double sum = 0.0;
    for (double p : transitions_[c]) sum += p;
    if (transitions_[c].size() != vocab || std::abs(sum - 1.0) > 1e-9)
      throw Error("markov: row " + std::to_string(c) + " is not a distribution over " + std::to_string(vocab) +
                  " tokens");
  }
  solve();
}

void MarkovChain::solve() {
  const std::size_t n = transitions_.size();
  // Power iteration from the uniform distribution until the L1 change is below 1e-14.
  std::vector<double> pi(n, 1.0 / static_cast<double>(n)), next(n);
  double change = 1.0;
  for (int iteration = 0; iteration < 100000 && change > 1e-14; ++iteration) {
    std::fill(next.begin(), next.end(), 0.0);
    for (std::size_t c = 0; c < n; ++c) {
      const std::size_t shifted = (c * vocab_) % n;  // drop the oldest token, make room for y
      for (std::size_t y = 0; y < vocab_; ++y) next[shifted + (n == 1 ? 0 : y)] += pi[c] * transitions_[c][y];
    }
    change = 0.0;
    for (std::size_t c = 0; c < n; ++c) change += std::abs(next[c] - pi[c]);
    pi.swap(next);
  }
  if (change > 1e-10) throw Error("markov: the stationary distribution did not converge (periodic chain?)");
  stationary_ = pi;
  entropy_rate_ = 0.0;
  for (std::size_t c = 0; c < n; ++c) entropy_rate_ += pi[c] * entropy(transitions_[c]);
}

double MarkovChain::window_floor(std::size_t seq) const {
  // H_m for m = 1..k: the entropy of the first m tokens of a context, a marginal of pi. With the
  // oldest token most significant, the first m tokens of context c are c / V^(k - m).
  std::vector<double> H(order_ + 1, 0.0);
  for (std::size_t m = 1; m <= order_; ++m) {
    const std::size_t divisor = power(vocab_, order_ - m);
    std::vector<double> marginal(power(vocab_, m), 0.0);
    for (std::size_t c = 0; c < stationary_.size(); ++c) marginal[c / divisor] += stationary_[c];
    H[m] = entropy(marginal);
  }
  // Position j has seen j + 1 tokens: it pays H_{j+2} - H_{j+1} while j + 2 <= k, then the rate h.
  double total = 0.0;
  for (std::size_t j = 0; j < seq; ++j) total += (j + 2 <= order_) ? H[j + 2] - H[j + 1] : entropy_rate_;
  return seq ? total / static_cast<double>(seq) : entropy_rate_;
}

Tokens MarkovChain::generate(std::size_t n, std::mt19937_64& rng) const {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  // The index of the first cumulative sum above u: a draw from p (the last index if rounding errs).
  auto draw = [&](const std::vector<double>& p) {
    double u = uniform(rng);
    for (std::size_t i = 0; i < p.size(); ++i)
      if ((u -= p[i]) < 0.0) return i;
    return p.size() - 1;
  };
  Tokens out;
  out.reserve(n + order_);
  std::size_t context = draw(stationary_);  // the first k tokens, from pi
  for (std::size_t m = order_; m-- > 0;)
    out.push_back(static_cast<std::int64_t>((context / power(vocab_, m)) % vocab_));
  const std::size_t n_contexts = transitions_.size();
  while (out.size() < n) {
    const std::size_t y = draw(transitions_[context]);
    out.push_back(static_cast<std::int64_t>(y));
    context = (context * vocab_ + y) % n_contexts;
  }
  out.resize(n);
  return out;
}

Dataset markov_dataset(const MarkovChain& chain, std::size_t train_tokens, std::size_t validation_tokens,
                       unsigned seed) {
  static const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&()*+,-./:;<=>?@[]^_{|}~";
  std::vector<std::string> symbols;
  for (std::size_t i = 0; i < chain.vocab(); ++i) {
    std::string symbol(1, i < alphabet.size() ? alphabet[i] : '<');
    if (i >= alphabet.size()) symbol += std::to_string(i) + ">";
    symbols.push_back(symbol);
  }
  std::seed_seq train_seed{seed, 1u}, validation_seed{seed, 2u};
  std::mt19937_64 train_rng(train_seed), validation_rng(validation_seed);
  Tokens train = chain.generate(train_tokens, train_rng);
  Tokens validation = chain.generate(validation_tokens, validation_rng);
  return Dataset(std::move(train), std::move(validation), std::move(symbols));
}

Dataset dump_corpus(std::size_t vocab, std::size_t batch, std::size_t seq, unsigned seed) {
  MarkovOptions mo;
  mo.vocab = vocab;
  mo.seed = seed;
  const MarkovChain chain(mo);
  return markov_dataset(chain, 4 * batch * (seq + 1) + 1024, 2 * (seq + 1), seed);
}

Batch dump_batch(const Dataset& corpus, std::size_t batch, std::size_t seq, unsigned seed) {
  std::mt19937_64 rng(seed);
  return corpus.batch(Split::train, batch, seq, rng);
}

}  // namespace gs::nn
