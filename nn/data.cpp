#include "nn/data.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "engine/error.hpp"
#include "nn/atomic_file.hpp"

namespace gs::nn {

// ---- Dataset ----

Dataset::Dataset(Tokens train, Tokens validation, std::vector<std::string> symbols)
    : train_(std::move(train)), validation_(std::move(validation)), symbols_(std::move(symbols)) {
  for (const Tokens* split : {&train_, &validation_})
    for (std::int64_t t : *split)
      if (t < 0 || static_cast<std::size_t>(t) >= symbols_.size())
        throw Error("dataset: token " + std::to_string(t) + " is outside the vocabulary of " +
                    std::to_string(symbols_.size()));
}

Batch Dataset::batch(Split split, std::size_t batch, std::size_t seq, std::mt19937_64& rng) const {
  const Tokens& stream = tokens(split);
  if (stream.size() < seq + 1)
    throw Error("dataset: the " + std::string(split == Split::train ? "training" : "validation") + " split has " +
                std::to_string(stream.size()) + " tokens, fewer than seq + 1 = " + std::to_string(seq + 1));
  std::uniform_int_distribution<std::size_t> offset(0, stream.size() - seq - 1);
  Batch out{IndexArray::from_shape({batch, seq}), IndexArray::from_shape({batch, seq})};
  for (std::size_t b = 0; b < batch; ++b) {
    const std::size_t start = offset(rng);
    for (std::size_t t = 0; t < seq; ++t) {
      out.inputs(b, t) = stream[start + t];
      out.targets(b, t) = stream[start + t + 1];  // the next token
    }
  }
  return out;
}

std::string Dataset::decode(std::int64_t token) const {
  if (token < 0 || static_cast<std::size_t>(token) >= symbols_.size())
    throw Error("dataset: cannot decode token " + std::to_string(token) + " (vocab " +
                std::to_string(symbols_.size()) + ")");
  return symbols_[static_cast<std::size_t>(token)];
}

std::string Dataset::decode(const Tokens& tokens) const {
  std::string text;
  for (std::int64_t t : tokens) text += decode(t);
  return text;
}

Tokens Dataset::encode(std::string_view text) const {
  std::array<std::int64_t, 256> id;
  id.fill(-1);
  for (std::size_t i = 0; i < symbols_.size(); ++i) {
    if (symbols_[i].size() != 1) throw Error("dataset: encode needs single-byte symbols, token " + std::to_string(i) +
                                             " prints as '" + symbols_[i] + "'");
    id[static_cast<unsigned char>(symbols_[i][0])] = static_cast<std::int64_t>(i);
  }
  Tokens out;
  for (char c : text) {
    const std::int64_t t = id[static_cast<unsigned char>(c)];
    if (t < 0) throw Error("dataset: character '" + std::string(1, c) + "' (byte " +
                           std::to_string(static_cast<unsigned char>(c)) + ") is not in the vocabulary");
    out.push_back(t);
  }
  return out;
}

Dataset char_dataset(const std::filesystem::path& path, double validation_fraction) {
  const std::string text = read_file(path);
  if (text.size() < 4) throw Error(path.string() + ": too short for a dataset (" + std::to_string(text.size()) + " bytes)");
  // The vocabulary: the file's distinct bytes, sorted.
  std::set<unsigned char> distinct(text.begin(), text.end());
  std::vector<std::string> symbols;
  for (unsigned char c : distinct) symbols.emplace_back(1, static_cast<char>(c));
  Dataset vocab_only({}, {}, symbols);
  const Tokens all = vocab_only.encode(text);
  const auto split = static_cast<std::size_t>(static_cast<double>(all.size()) * (1.0 - validation_fraction));
  return Dataset(Tokens(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(split)),
                 Tokens(all.begin() + static_cast<std::ptrdiff_t>(split), all.end()), symbols);
}

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
  if (o.concentration <= 0.0) throw Error("markov: concentration must be positive");
  if (o.smoothing < 0.0 || o.smoothing > 1.0) throw Error("markov: smoothing must be in [0, 1]");
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

}  // namespace gs::nn
