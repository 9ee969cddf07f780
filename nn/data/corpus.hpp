// The corpus a training run reads: a text file's characters (nn/data/dataset.hpp), or a random order-k
// Markov chain (nn/data/markov.hpp), with the losses its numbers are judged against.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nn/data/dataset.hpp"

namespace gs::nn {

struct Corpus {
  std::string name;  // "markov" or the text file's path
  Dataset data;
  double uniform = 0.0;       // log V: the loss of the uniform prediction, every logit equal
  double unigram = 0.0;       // H1, the entropy of the training split's token frequencies (nats):
                              // the best loss of a model that ignores the context
  double floor = 0.0;         // Markov: the chain's entropy rate, the lowest loss any model can reach;
                              // NaN for a text file (unknown)
  double window_floor = 0.0;  // Markov: the best mean loss over windows of `seq` tokens; NaN for text
};

// What a run trains on: a text file's characters, or (text empty) a random order-k Markov chain over
// the model's vocab, seeded by the model's seed. The comments name the experiments' flags that set each.
struct CorpusOptions {
  std::string text;                   // --text: a text file, the last 10% held out; empty: the Markov corpus
  std::size_t order = 2;              // --markov-order: tokens of context
  double concentration = 0.05;        // --markov-concentration: Dirichlet concentration of each context's row
  double smoothing = 0.01;            // the uniform share mixed into each row (MarkovOptions)
  std::size_t train_tokens = std::size_t{1} << 21;
  std::size_t validation_tokens = std::size_t{1} << 17;
};

// The one corpus builder: the text file, or the Markov chain of (vocab, seed); seq sets window_floor.
Corpus build_corpus(const CorpusOptions& options, std::size_t vocab, unsigned seed, std::size_t seq);

// The bytes a corpus takes in memory: a text file's bytes and their tokens, or the Markov corpus's
// tokens and its chain's vocab^(order + 1) transition probabilities.
double corpus_bytes(const CorpusOptions& options, std::size_t vocab);

// p_v = (count of token v) / (number of tokens): the tokens' empirical frequencies, one per symbol.
std::vector<double> unigram_distribution(const Tokens& tokens, std::size_t vocab);
// H = -sum_v p_v log p_v of those frequencies, in nats.
double unigram_entropy(const Tokens& tokens, std::size_t vocab);

}  // namespace gs::nn
