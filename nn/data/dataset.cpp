#include "nn/data/dataset.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

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

Dataset char_dataset(const std::filesystem::path& path, double validation_fraction, std::size_t max_bytes) {
  if (!(validation_fraction >= 0.0 && validation_fraction < 1.0))
    throw Error(path.string() + ": the validation fraction " + std::to_string(validation_fraction) +
                " is not in [0, 1)");
  const std::string text = read_file(path, max_bytes);
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

}  // namespace gs::nn
