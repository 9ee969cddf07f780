// Training data: token streams cut into random (batch, seq) windows, and the first source of them:
// char_dataset, any text file, one token per distinct byte (vocab = the file's sorted distinct bytes).
// The other source, a synthetic Markov corpus with a known loss floor, is nn/data/markov.hpp.
// Nothing is downloaded or shipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/array.hpp"

namespace gs::nn {

// inputs and targets are (batch, seq); targets[b][t] is the token after inputs[b][t] in the stream,
// so targets[b][t] == inputs[b][t + 1] for t < seq - 1.
struct Batch {
  IndexArray inputs;
  IndexArray targets;
};

enum class Split { train, validation };

using Tokens = std::vector<std::int64_t>;

class Dataset {
 public:
  // symbols[i] is how token i prints.
  Dataset(Tokens train, Tokens validation, std::vector<std::string> symbols);

  std::size_t vocab() const { return symbols_.size(); }
  const Tokens& tokens(Split split) const { return split == Split::train ? train_ : validation_; }

  // `batch` windows of seq + 1 consecutive tokens, each at a uniformly random offset drawn from rng:
  // inputs = window[0, seq), targets = window[1, seq + 1). Throws if the split is shorter than seq + 1.
  Batch batch(Split split, std::size_t batch, std::size_t seq, std::mt19937_64& rng) const;

  std::string decode(std::int64_t token) const;
  std::string decode(const Tokens& tokens) const;
  // Inverse of decode for datasets whose symbols are single bytes; throws for an unknown character.
  Tokens encode(std::string_view text) const;

 private:
  Tokens train_, validation_;
  std::vector<std::string> symbols_;
};

// A character-level dataset from a text file: vocab = the sorted distinct bytes of the file; the first
// (1 - validation_fraction) of the file is the training split, the rest the validation split.
// Reads only a regular file (not a directory, a FIFO or a device such as /dev/zero) of at most
// max_bytes: it becomes 17 bytes of memory per byte of text (int64 tokens, twice), so the default
// 16 MiB take about 270 MiB. Anything else is a gs::Error naming the file (and the limit).
inline constexpr std::size_t text_dataset_max_bytes = std::size_t{16} << 20;
Dataset char_dataset(const std::filesystem::path& path, double validation_fraction = 0.1,
                     std::size_t max_bytes = text_dataset_max_bytes);

}  // namespace gs::nn
