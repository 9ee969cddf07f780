#include "experiments/common/training.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "engine/engine.hpp"
#include "nn/data/markov.hpp"

namespace gs::experiments {

std::mt19937_64 stream(unsigned seed, std::size_t step, unsigned purpose) {
  std::seed_seq seq{seed, static_cast<unsigned>(step), static_cast<unsigned>(step >> 32), purpose};
  return std::mt19937_64(seq);
}

nn::Batch training_batch(const nn::Dataset& data, std::size_t batch, std::size_t seq, unsigned seed, std::size_t step) {
  std::mt19937_64 rng = stream(seed, step, train_stream);
  return data.batch(nn::Split::train, batch, seq, rng);
}

// ---- corpora ----

double unigram_entropy(const nn::Tokens& tokens, std::size_t vocab) {
  std::vector<double> count(vocab, 0.0);
  for (std::int64_t t : tokens) count.at(static_cast<std::size_t>(t)) += 1.0;
  double h = 0.0;
  for (double c : count)
    if (c > 0) {
      const double p = c / static_cast<double>(tokens.size());
      h -= p * std::log(p);
    }
  return h;
}

namespace {

Corpus make_corpus(std::string name, nn::Dataset data, double floor, double window_floor) {
  const double uniform = std::log(static_cast<double>(data.vocab()));
  const double unigram = unigram_entropy(data.tokens(nn::Split::train), data.vocab());
  return Corpus{std::move(name), std::move(data), uniform, unigram, floor, window_floor};
}

}  // namespace

Corpus markov_corpus(const MarkovCorpusOptions& o, std::size_t seq) {
  nn::MarkovOptions mo;
  mo.vocab = o.vocab;
  mo.order = o.order;
  mo.concentration = o.concentration;
  mo.seed = o.seed;
  const nn::MarkovChain chain(mo);
  return make_corpus("markov", nn::markov_dataset(chain, o.train_tokens, o.validation_tokens, o.seed),
                     chain.entropy_rate(), chain.window_floor(seq));
}

Corpus text_corpus(const std::filesystem::path& path) {
  return make_corpus(path.string(), nn::char_dataset(path), NAN, NAN);
}

// ---- evaluation and training ----

double evaluate(nn::TransformerLM& model, const nn::Dataset& data, std::size_t batch, std::size_t seq,
                std::size_t batches, unsigned seed) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  std::mt19937_64 rng = stream(seed, 0, eval_stream);
  double total = 0.0;
  for (std::size_t i = 0; i < batches; ++i) {
    tape.reset();
    const nn::Batch b = data.batch(nn::Split::validation, batch, seq, rng);
    total += model.loss(b.inputs, b.targets).value()();
  }
  tape.reset();
  return total / static_cast<double>(batches);
}

double forward_backward(nn::TransformerLM& model, const nn::Batch& batch) {
  Tape::current().reset();
  model.zero_grad();
  const Var l = model.loss(batch.inputs, batch.targets);
  const double loss = l.value()();
  if (std::isfinite(loss)) l.backward();
  return loss;
}

Update apply_update(nn::Optimizer& optimizer, const nn::Schedule& schedule, std::size_t step, double clip) {
  Update u;
  u.grad_norm = nn::clip_grad_norm(optimizer.parameters(), clip);
  u.lr = schedule.lr(step);
  optimizer.step(u.lr);
  return u;
}

bool StepResult::finite() const { return std::isfinite(loss); }

StepResult train_step(nn::TransformerLM& model, nn::Optimizer& optimizer, const StepSetup& setup, std::size_t step) {
  const nn::Batch batch = training_batch(*setup.data, setup.batch, setup.seq, setup.seed, step);
  StepResult r;
  r.loss = forward_backward(model, batch);
  if (!r.finite()) {
    r.grad_norm = NAN;
    r.lr = setup.schedule.lr(step);
    return r;
  }
  const Update u = apply_update(optimizer, setup.schedule, step, setup.clip);
  r.grad_norm = u.grad_norm;
  r.lr = u.lr;
  return r;
}

void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr error;
  auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        next = n;  // the others stop after their current index
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < std::max(1u, jobs); ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

// ---- verdicts ----

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::trained:
      return "trained";
    case Verdict::stuck:
      return "stuck";
    case Verdict::diverged:
      return "diverged";
  }
  return "?";
}

Verdict verdict_of(double final_loss, const Thresholds& t) {
  if (!std::isfinite(final_loss) || final_loss > t.uniform + t.margin) return Verdict::diverged;
  if (final_loss > t.stuck - t.margin) return Verdict::stuck;
  return Verdict::trained;
}

}  // namespace gs::experiments
