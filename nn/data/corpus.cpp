#include "nn/data/corpus.hpp"

#include <cmath>
#include <filesystem>

#include "engine/error.hpp"
#include "nn/data/markov.hpp"

namespace gs::nn {

std::vector<double> unigram_distribution(const Tokens& tokens, std::size_t vocab) {
  std::vector<double> p(vocab, 0.0);
  for (std::int64_t t : tokens) p.at(static_cast<std::size_t>(t)) += 1.0;
  for (double& x : p) x /= static_cast<double>(tokens.size());
  return p;
}

double unigram_entropy(const Tokens& tokens, std::size_t vocab) {
  double h = 0.0;
  for (double p : unigram_distribution(tokens, vocab))
    if (p > 0) h -= p * std::log(p);
  return h;
}

namespace {

Corpus make_corpus(std::string name, Dataset data, double floor, double window_floor) {
  const double uniform = std::log(static_cast<double>(data.vocab()));
  const double unigram = unigram_entropy(data.tokens(Split::train), data.vocab());
  return Corpus{std::move(name), std::move(data), uniform, unigram, floor, window_floor};
}

Corpus text_corpus(const std::filesystem::path& path, std::size_t seq) {
  Dataset data = char_dataset(path);
  if (data.vocab() < 2)  // one symbol: every next token is certain, loss 0 with nothing learned
    throw Error("--text " + path.string() + ": has " + std::to_string(data.vocab()) +
                " distinct byte(s); a language model needs at least 2 symbols to predict (as --vocab is at least 2)");
  for (const Split split : {Split::train, Split::validation}) {  // a batch's windows are seq + 1 tokens long
    const std::size_t n = data.tokens(split).size();
    if (n < seq + 1)
      throw Error("--text " + path.string() + ": its " +
                  (split == Split::train ? "training split (the first 90%" : "validation split (the last 10%") +
                  " of the file) has " + std::to_string(n) + " bytes, fewer than the --seq + 1 = " +
                  std::to_string(seq + 1) + " of one window; give a longer file or a smaller --seq");
  }
  return make_corpus(path.string(), std::move(data), NAN, NAN);
}

}  // namespace

Corpus build_corpus(const CorpusOptions& o, std::size_t vocab, unsigned seed, std::size_t seq) {
  if (!o.text.empty()) return text_corpus(o.text, seq);
  const MarkovChain chain({vocab, o.order, o.concentration, o.smoothing, seed});
  return make_corpus("markov", markov_dataset(chain, o.train_tokens, o.validation_tokens, seed),
                     chain.entropy_rate(), chain.window_floor(seq));
}

double corpus_bytes(const CorpusOptions& o, std::size_t vocab) {
  if (!o.text.empty()) return 9.0 * static_cast<double>(std::filesystem::file_size(o.text));  // a byte, a token
  const double tokens = static_cast<double>(o.train_tokens + o.validation_tokens);
  return 8.0 * (tokens + std::pow(static_cast<double>(vocab), static_cast<double>(o.order) + 1.0));
}

}  // namespace gs::nn
