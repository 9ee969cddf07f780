// train: trains a TransformerLM on a synthetic Markov corpus (the default: its entropy rate is the
// loss floor, printed at the start) or on the characters of any text file (--text FILE).
//
//   build/bin/train                                   defaults: within 0.15 nats of the floor
//   build/bin/train --text /usr/share/common-licenses/GPL-3 --steps 3000 --sample 400
//   build/bin/train --steps 1000 --save ckpt     (Ctrl-C saves the last finished step) then
//   build/bin/train --resume ckpt                (continues to step 1000 with the recorded flags)
//
// Every step draws its batch from an RNG seeded by (seed, step), and the checkpoint records the options
// that decide the run (train_record), so a resumed run sees exactly the batches and learning rates the
// uninterrupted run would have seen, and ends with the same weights, bit for bit.
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "experiments/lib/experiment.hpp"
#include "experiments/lib/graph.hpp"
#include "experiments/lib/interrupt.hpp"
#include "experiments/lib/outputs.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/json.hpp"

using Clock = std::chrono::steady_clock;

// The options a checkpoint records (train_record), as typed JSON: every one that decides the run. Not
// the outputs and what only prints (--out --save --resume --dump --graph --sample --temperature --html
// --seeds), nor the corpus's sizes, which no flag sets.
namespace gs::nn {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CorpusOptions, text, order, concentration)
}
namespace gs::experiments {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ModelOptions, vocab, layers, d_model, heads, d_ff, seq, batch, placement, norm,
                                   residual, mixln_post, dyt_alpha, qk_norm, init, seed)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OptimizerSetup, optimizer, beta1, beta2, eps, weight_decay, hold, adam_v0, z_loss,
                                   intervene)
}  // namespace gs::experiments

namespace {

struct TrainOptions : TrainingOptions {  // --steps 1500 --clip 1 --eval-batches 40
  TrainOptions() { steps = 1500, clip = 1.0, eval_batches = 40; }
  double lr = 1e-2;
  std::size_t warmup = 100;
  std::string schedule = "cosine";
  std::size_t schedule_steps = 0;    // N of the schedule (cosine decays to 0.1 lr at N); 0: --steps
  OptimizerSetup opt = [] {  // make_optimizer's defaults: AdamW(0.9, 0.999, eps 1e-8)
    OptimizerSetup s;
    s.optimizer = "adamw";
    s.beta2 = 0.999;
    return s;
  }();
  nn::CorpusOptions corpus;              // --text, --markov-order, --markov-concentration
  std::size_t eval_every = 250;      // steps between validation evaluations (0: only at the end)
  std::string out, save, resume, dump;
  std::size_t sample = 0;
  double temperature = 1.0;          // 0: greedy
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainOptions, steps, clip, eval_batches, lr, warmup, schedule, schedule_steps, eval_every,
                                   opt, corpus)

// n tokens sampled one at a time from softmax(logits / temperature), each conditioned on the last
// `context` tokens, starting from one token of the validation split. Temperature 0 is the limit:
// always the most likely token (the first of equals).
std::string sample(nn::TransformerLM& model, const nn::Dataset& data, std::size_t n, double temperature,
                   unsigned seed) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  std::mt19937_64 rng = nn::rng_for(seed, 0, nn::RngPurpose::sample);
  const nn::Tokens& val = data.tokens(nn::Split::validation);
  nn::Tokens tokens{val[std::uniform_int_distribution<std::size_t>(0, val.size() - 1)(rng)]};
  const std::size_t context = model.config.context, vocab = model.config.vocab;
  for (std::size_t i = 0; i < n; ++i) {
    stop_if_requested_in("sampling", "while sampling, after " + std::to_string(i) + " of " + std::to_string(n) +
                                         " characters; the training finished and its outputs are written; no sample printed");
    tape.reset();
    const std::size_t t = std::min(tokens.size(), context);
    IndexArray ids = IndexArray::from_shape({1, t});
    std::copy(tokens.end() - static_cast<std::ptrdiff_t>(t), tokens.end(), ids.begin());
    const Array& logits = model.logits(ids).value();  // (1, t, V); the last row predicts the next token
    if (temperature == 0.0) {  // greedy: the most likely token
      std::size_t best = 0;
      for (std::size_t v = 1; v < vocab; ++v)
        if (logits(0, t - 1, v) > logits(0, t - 1, best)) best = v;
      tokens.push_back(static_cast<std::int64_t>(best));
      continue;
    }
    std::vector<double> p(vocab);
    double max = -INFINITY;
    for (std::size_t v = 0; v < vocab; ++v) max = std::max(max, logits(0, t - 1, v) / temperature);
    for (std::size_t v = 0; v < vocab; ++v) p[v] = std::exp(logits(0, t - 1, v) / temperature - max);
    std::discrete_distribution<std::int64_t> next(p.begin(), p.end());
    tokens.push_back(next(rng));
  }
  tape.reset();
  return data.decode(nn::Tokens(tokens.begin() + 1, tokens.end()));
}

// ---- what a checkpoint records of the run, and --resume ----

// The flag that sets a member of the record: "--" and the member's name with dashes, but for these.
std::string flag_of(const std::string& member) {
  static const std::map<std::string, std::string> renamed = {{"beta1", "--adam-beta1"}, {"beta2", "--adam-beta2"},
                                                             {"eps", "--adam-eps"}, {"order", "--markov-order"},
                                                             {"concentration", "--markov-concentration"}};
  if (const auto it = renamed.find(member); it != renamed.end()) return it->second;
  std::string flag = "--" + member;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// A recorded value as its flag is written: "0.01", "cosine", "ln-undo-gain,detach-skip".
std::string text_of(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return label(v.get<double>());  // in its shortest exact form, as the flag reads it back
  if (!v.is_array()) return v.dump();
  std::string list;
  for (const nlohmann::json& e : v) list += (list.empty() ? "" : ",") + text_of(e);
  return list;
}

// A resumed run may train further (--steps) and evaluate otherwise; --text is compared by its bytes.
bool may_differ(const std::string& flag) {
  return flag == "--steps" || flag == "--eval-every" || flag == "--eval-batches" || flag == "--text";
}

// `now` (this run's record, from its flags) takes every member of `saved` (the checkpoint's) whose flag
// was not given; a given one must have the saved value. Throws gs::Error naming the flag and both values.
void restore(nlohmann::json& now, const nlohmann::json& saved, const CLI::App& app, const std::string& where) {
  for (const auto& [member, value] : saved.items()) {
    const std::string flag = flag_of(member);
    if (!now.contains(member))
      throw Error(where + "the checkpoint was trained with " + flag + " " + text_of(value) + ", a flag this train does "
                  "not record (a checkpoint of another gradscope); it cannot be continued exactly");
    if (value.is_object()) restore(now[member], value, app, where);
    else if (app.count(flag) == 0) now[member] = value;
    else if (now[member] != value && !may_differ(flag))
      throw Error(where + flag + " " + text_of(now[member]) + " contradicts the checkpoint, which was trained with " + flag +
                  " " + text_of(value) + " (leave " + flag + " out to continue with " + text_of(value) + ")");
  }
  for (const auto& [member, value] : now.items())
    if (const std::string flag = flag_of(member); !saved.contains(member) && !value.is_object() && app.count(flag) > 0)
      throw Error(where + "the checkpoint does not record " + flag + " (its train had no such flag), so a run with " +
                  flag + " cannot continue it exactly; leave " + flag + " out");
}

// What a checkpoint records in its "train" object: the options that decide the run, and a text file's SHA-256.
nlohmann::json train_record(const Experiment& ex, const TrainOptions& o) {
  nlohmann::json record = {{"model", ex.model}, {"training", o}};
  if (!o.corpus.text.empty()) record["data_sha256"] = nn::sha256_of_file(o.corpus.text);  // what `sha256sum FILE` prints
  return record;
}

// A resumed run takes the options from the checkpoint (a flag given must agree with it), and the same
// data: a text file with the SHA-256 the checkpoint records.
void restore_from_checkpoint(Experiment& ex, TrainOptions& o, const nn::CheckpointInfo& resumed) {
  const nlohmann::json& saved = resumed.train();  // the checkpoint's "train" object (nn/io/checkpoint.hpp)
  const std::string where = "--resume " + o.resume + ": ";
  if (!saved.contains("model") || !saved.contains("training"))
    throw Error(where + "the checkpoint records no training options (an earlier gradscope train saved it), so its run "
                "cannot be continued exactly");
  const bool text_given = ex.app.count("--text") > 0;
  std::string saved_text;
  try {
    nlohmann::json now = train_record(ex, o);
    for (const char* part : {"model", "training"}) restore(now[part], saved.at(part), ex.app, where);
    now.at("model").get_to(ex.model);
    now.at("training").get_to(o);
    saved_text = saved.at("training").at("corpus").at("text").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + nn::json_error((resumed.dir / "config.json").string(), e));
  }
  if (text_given && saved_text.empty() && !o.corpus.text.empty())
    throw Error(where + "--text " + o.corpus.text + " contradicts the checkpoint, which was trained on the Markov corpus "
                "(leave --text out)");
  if (!o.corpus.text.empty() && saved.contains("data_sha256")) {
    const std::string was = saved["data_sha256"].is_string() ? saved["data_sha256"].get<std::string>() : "";
    const std::string now = nn::sha256_of_file(o.corpus.text);
    if (was != now)
      throw Error(where + "--text " + o.corpus.text + " has SHA-256 " + now + ", the checkpoint was trained on " +
                  saved_text + " with SHA-256 " + was + " (the same name must also be the same bytes)");
  }
}

// The corpus, printed; a text file sets the model's vocab.
nn::Corpus load_corpus(const TrainOptions& o, nn::ModelConfig& config, const std::optional<nn::CheckpointInfo>& resumed) {
  nn::Corpus corpus = nn::build_corpus(o.corpus, config.vocab, config.seed, config.context);
  if (o.corpus.text.empty()) {
    std::printf("data: Markov chain, vocab %zu, order %zu, concentration %g, seed %u\n", config.vocab, o.corpus.order,
                o.corpus.concentration, config.seed);
    std::printf("      entropy rate (the loss floor) %.4f nats/token; log V = %.4f; best mean loss over windows of %zu: "
                "%.4f\n", corpus.floor, corpus.uniform, config.context, corpus.window_floor);
    return corpus;
  }
  const nn::Dataset& data = corpus.data;
  std::printf("data: %s, %zu training and %zu validation characters, vocab %zu\n", o.corpus.text.c_str(),
              data.tokens(nn::Split::train).size(), data.tokens(nn::Split::validation).size(), data.vocab());
  if (resumed && resumed->config.vocab != data.vocab())
    throw Error("--text " + o.corpus.text + " has vocab " + std::to_string(data.vocab()) + ", the checkpoint " +
                std::to_string(resumed->config.vocab));
  config.vocab = data.vocab();
  return corpus;
}

struct Final {
  double val_loss;  // the final validation loss
  double gap;       // its distance from the entropy-rate floor (NaN for a text file)
};

struct Trained {
  double seconds;      // spent training (evaluations included, the final one not)
  double val_loss;     // the final validation loss
  std::size_t steps;   // steps finished: o.steps, or fewer when SIGINT/SIGTERM stopped the loop
};

// A CSV file that grows while the run goes (train.csv, eval.csv), always whole on disk: the rows are
// kept in memory and the whole file is rewritten atomically (a temporary file, then rename) by flush(),
// which row() also calls when a second has passed since the last write. Numbers get 10 significant digits.
class CsvWriter {
 public:
  CsvWriter(std::filesystem::path path, const std::vector<std::string>& columns)
      : path_(std::move(path)), columns_(columns.size()), last_flush_(Clock::now()) {
    for (std::size_t i = 0; i < columns.size(); ++i) text_ += (i ? "," : "") + columns[i];
    text_ += '\n';
    if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path());
  }
  ~CsvWriter() {  // flushes (an error then is only printed)
    try {
      flush();
    } catch (const std::exception& e) {
      std::cerr << "warning: " << e.what() << "\n";
    }
  }
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  void row(const std::vector<double>& values) {
    if (values.size() != columns_)
      throw Error("csv " + path_.string() + ": a row of " + std::to_string(values.size()) + " values for " +
                  std::to_string(columns_) + " columns");
    char buf[32];
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%.10g", values[i]);
      if (i) text_ += ',';
      text_ += buf;
    }
    text_ += '\n';
    dirty_ = true;
    if (Clock::now() - last_flush_ > std::chrono::seconds(1)) flush();
  }

  // For a resumed run: keeps the rows of the file already at the path (if its header is the same) whose
  // first value is at most `last`: the steps up to the checkpoint.
  void keep_existing_rows(double last) {
    if (!std::filesystem::exists(path_)) return;
    std::istringstream old(nn::read_file(path_));
    std::string line, header = text_.substr(0, text_.find('\n'));
    if (!std::getline(old, line) || line != header) return;
    while (std::getline(old, line))
      if (!line.empty() && std::strtod(line.c_str(), nullptr) <= last) text_ += line + '\n';
    dirty_ = true;
  }

  void flush() {
    if (!dirty_) return;
    mark_writing(path_);
    nn::write_file_atomically(path_, text_);
    dirty_ = false;
    last_flush_ = Clock::now();
  }

 private:
  std::filesystem::path path_;
  std::size_t columns_;
  std::string text_;
  bool dirty_ = true;
  Clock::time_point last_flush_;
};

// --out: train.csv and eval.csv (none without --out), continuing a resumed run's files from `start`.
std::pair<std::unique_ptr<CsvWriter>, std::unique_ptr<CsvWriter>> open_csvs(const TrainOptions& o, bool z_loss,
                                                                            std::size_t start) {
  if (o.out.empty()) return {};
  std::vector<std::string> columns = {"step", "loss", "lr", "grad_norm", "tokens_per_s"};
  if (z_loss) columns.push_back("mean_log_z_sq");  // the z-loss term over C, beside the CE in "loss"
  auto train_csv = std::make_unique<CsvWriter>(std::filesystem::path(o.out) / "train.csv", columns);
  auto eval_csv = std::make_unique<CsvWriter>(std::filesystem::path(o.out) / "eval.csv",
                                              std::vector<std::string>{"step", "val_loss"});
  if (!o.resume.empty()) {
    train_csv->keep_existing_rows(static_cast<double>(start));
    eval_csv->keep_existing_rows(static_cast<double>(start));
  }
  return {std::move(train_csv), std::move(eval_csv)};
}

// With a z-loss: mean (log Z)^2 of the last step's batch (the loss trained was CE + C times it; the
// step's reported loss is the CE). NaN without one.
double mean_log_z_sq(nn::TransformerLM& model) {
  if (model.z_loss <= 0) return NAN;
  const Array& log_z = model.last.log_z.value();  // (B, T), still on the tape
  double z_term = 0.0;
  for (double v : log_z) z_term += v * v / static_cast<double>(log_z.size());
  return z_term;
}

// Why step `step` of the run is not finite, naming the flags most likely responsible: at step 0 the
// loss term (no update has been taken); later the updates, so the rate and the weight decay.
std::string not_finite_message(const nn::StepResult& r, std::size_t step, const TrainOptions& o) {
  refuse_first_step(r, step, o.opt.loss_term_flag());
  std::string likely = "--lr " + fmt(o.lr);
  if (o.opt.weight_decay > 0) likely += " or --weight-decay " + fmt(o.opt.weight_decay);
  return not_finite_text(r, step) + ": the updates blew the weights up; " + likely + " is the likely cause" +
         (o.clip > 0 ? "" : " (--clip bounds the gradient of each update)");
}

// Steps start .. o.steps: batch, forward, backward, clip, update; train.csv and eval.csv in --out; then
// the validation loss averaged over eval_batches batches. A signal stops the loop between two steps
// (interrupt.hpp); what follows is then done for the steps finished.
Trained train_loop(nn::TransformerLM& model, nn::Optimizer& optimizer, const nn::StepSetup& setup, std::size_t start,
                  const TrainOptions& o) {
  const auto [train_csv, eval_csv] = open_csvs(o, model.z_loss > 0, start);
  const std::size_t B = setup.batch, T = setup.seq;
  Progress progress("train", o.steps - std::min(start, o.steps), "steps");
  const auto train_start = Clock::now();
  double stepping_seconds = 0.0;
  std::size_t step = start;
  for (; step < o.steps; ++step) {
    if (stop_requested(step)) break;
    const auto step_start = Clock::now();
    const nn::StepResult r = nn::train_step(model, optimizer, setup, step);
    if (!r.finite()) throw Error(not_finite_message(r, step, o));
    const double step_seconds = seconds_since(step_start);
    stepping_seconds += step_seconds;  // excludes evaluations
    const double z_term = mean_log_z_sq(model);
    char what[160];
    std::snprintf(what, sizeof what, "loss %.4f lr %.2e |g| %.3f %6.1fk tok/s", r.loss, r.lr, r.grad_norm,
                  static_cast<double>((step + 1 - start) * B * T) / stepping_seconds / 1000.0);
    std::string progress_text = what;
    if (model.z_loss > 0) {
      std::snprintf(what, sizeof what, " mean (log Z)^2 %.4f", z_term);
      progress_text += what;
    }
    progress.advance(1, progress_text);
    if (train_csv) {
      std::vector<double> row = {static_cast<double>(step + 1), r.loss, r.lr, r.grad_norm, static_cast<double>(B * T) / step_seconds};
      if (model.z_loss > 0) row.push_back(z_term);
      train_csv->row(row);
    }
    if (o.eval_every && (step + 1) % o.eval_every == 0 && step + 1 < o.steps) {
      const double val = nn::evaluate(model, *setup.data, B, T, o.eval_batches, setup.seed);
      progress.finish();
      std::printf("step %zu: validation loss %.4f\n", step + 1, val);
      std::fflush(stdout);
      if (eval_csv) eval_csv->row({static_cast<double>(step + 1), val});
    }
  }
  progress.finish();
  Tape::current().reset();
  const double seconds = seconds_since(train_start);
  const double val = nn::evaluate(model, *setup.data, B, T, o.eval_batches, setup.seed);
  if (eval_csv) eval_csv->row({static_cast<double>(step), val});
  std::printf("%s: validation loss %.4f (mean of %zu batches of %zux%zu)", interrupt_signal() ? "at the stop" : "final",
              val, o.eval_batches, B, T);
  return {seconds, val, step};
}

// One run of the flags in `o` with the model `config` (from the checkpoint when resumed): data, model,
// training, the final figures printed, the outputs written. Returns the final validation loss and its gap.
Final train_one(Experiment& ex, TrainOptions& o, nn::ModelConfig config, const std::optional<nn::CheckpointInfo>& resumed,
                Clock::time_point program_start) {
  nn::ModelConfig largest = config;
  if (!o.corpus.text.empty()) largest.vocab = 256;  // a text file has at most 256 distinct bytes
  ex.check_memory(largest, o.opt.optimizer == "sgd" ? 1 : 2, ex.html_wanted(), 1, nn::corpus_bytes(o.corpus, config.vocab));
  const nn::Corpus corpus = load_corpus(o, config, resumed);
  const std::size_t B = ex.model.batch, T = config.context;

  nn::TransformerLM model(config);
  std::printf("model: %s\n       %zu parameters\n", nn::model_config_json(config).dump(2).c_str(),
              model.parameter_count());
  std::unique_ptr<nn::Optimizer> optimizer = o.opt.make(model);
  const nn::Schedule schedule = o.opt.with_hold({nn::parse_schedule(o.schedule), o.lr, o.warmup, o.schedule_steps, 0.1});
  std::size_t start = 0;
  if (resumed) {
    nn::load_checkpoint(*resumed, model, config, optimizer.get());  // config.json as read above
    start = resumed->step;
    std::printf("resumed: %s at step %zu\n", o.resume.c_str(), start);
  }
  std::printf("train: %zu steps of B=%zu T=%zu, %s lr %g, %s schedule over %zu steps, warmup %zu, clip %g, weight "
              "decay %g\n", o.steps, B, T, o.opt.optimizer.c_str(), o.lr, o.schedule.c_str(), o.schedule_steps, o.warmup,
              o.clip, o.opt.weight_decay);
  if (o.schedule == "cosine" && o.steps > o.schedule_steps)
    std::printf("note: the cosine schedule ends at step %zu (--schedule-steps); the steps after it run at 0.1 lr\n",
                o.schedule_steps);
  if (o.opt.hold || o.opt.interventions().any() || o.opt.beta1 != 0.9 || o.opt.beta2 != 0.999 || o.opt.eps != 1e-8 ||
      o.opt.adam_v0 != "zero" || o.opt.z_loss != 0.0)
    std::printf("       %s\n", o.opt.text().c_str());
  const auto recorder = ex.recorder(nn::placement_name(config) + ", " + o.opt.optimizer + " lr " + fmt(o.lr) +
                                        ", warmup " + std::to_string(o.warmup), model);
  const nn::StepSetup setup{&corpus.data, B, T, config.seed, schedule, o.clip, step_hooks(model, recorder.get())};
  const Trained t = train_loop(model, *optimizer, setup, start, o);
  if (recorder) {
    recorder->run().facts = {{"program", "train"}, {"placement", nn::placement_name(config)},
                             {"optimizer", o.opt.optimizer + ", lr " + fmt(o.lr) + ", " + o.schedule +
                                               " schedule, warmup " + std::to_string(o.warmup)},
                             {"steps", std::to_string(start) + " to " + std::to_string(o.steps)},
                             {"validation loss", fmt(t.val_loss)}};
    ex.add_run(0, recorder->take());
  }
  if (!std::isnan(corpus.floor)) std::printf(", entropy-rate floor %.4f, gap %.4f nats", corpus.floor, t.val_loss - corpus.floor);
  std::printf("\n       training %.1f s, total %.1f s\n", t.seconds, seconds_since(program_start));

  if (!o.save.empty()) {
    const nlohmann::json record = train_record(ex, o);
    nn::save_checkpoint(o.save, "train", model, config, t.steps, optimizer.get(), &record);
    std::printf("saved: %s (step %zu)\n", o.save.c_str(), t.steps);
  }
  if (!o.dump.empty()) {
    std::mt19937_64 rng = nn::rng_for(config.seed, t.steps, nn::RngPurpose::dump);
    dump_model(o.dump, model, corpus.data.batch(nn::Split::train, B, T, rng));
  }
  if (interrupt_signal() && t.steps < o.steps)
    throw Interrupted(interrupt_signal(), t.steps, " of " + std::to_string(o.steps) +
                      (o.save.empty() ? "" : "; saved the checkpoint of step " + std::to_string(t.steps) + " to " +
                                                 o.save + " (continue: train --resume " + o.save + ")"));
  if (o.sample > 0) std::printf("sample:\n%s\n", sample(model, corpus.data, o.sample, o.temperature, config.seed).c_str());
  return {t.val_loss, t.val_loss - corpus.floor};
}

// --graph FILE --graph-step N: trains steps 0 .. N-1 as the run would (same corpus, optimizer, schedule,
// clipping and batches), then draws the forward and backward pass of step N on its training batch.
void draw_graph_at_step(Experiment& ex, const TrainOptions& o, nn::ModelConfig config) {
  nn::ModelConfig largest = config;
  if (!o.corpus.text.empty()) largest.vocab = 256;  // a text file has at most 256 distinct bytes
  // the training steps, and the drawn pass with every contribution kept
  ex.check_memory(largest, o.opt.optimizer == "sgd" ? 1 : 2, true, 1, nn::corpus_bytes(o.corpus, config.vocab));
  const nn::Corpus corpus = load_corpus(o, config, std::nullopt);
  const std::size_t B = ex.model.batch, T = config.context;
  nn::TransformerLM model(config);
  std::unique_ptr<nn::Optimizer> optimizer = o.opt.make(model);
  const nn::Schedule schedule = o.opt.with_hold({nn::parse_schedule(o.schedule), o.lr, o.warmup, o.schedule_steps, 0.1});
  const nn::StepSetup setup{&corpus.data, B, T, config.seed, schedule, o.clip, step_hooks(model)};
  for (std::size_t step = 0; step < ex.graph_step; ++step) {
    const nn::StepResult r = nn::train_step(model, *optimizer, setup, step);
    if (!r.finite()) throw Error("--graph-step " + std::to_string(ex.graph_step) + ": " + not_finite_message(r, step, o));
  }
  write_pass_graph(ex.graph, model, nn::training_batch(corpus.data, B, T, config.seed, ex.graph_step),
                   nn::placement_name(config) + ", " + std::to_string(config.layers) + " layers, " +
                       o.opt.optimizer + " lr " + fmt(o.lr) + ", warmup " + std::to_string(o.warmup) + ", seed " +
                       std::to_string(config.seed) + ", at step " + std::to_string(ex.graph_step),
                   ex.html.overwrite);
}

// --resume DIR: the checkpoint, its flags restored into `o` (none without --resume).
std::optional<nn::CheckpointInfo> resume(Experiment& ex, TrainOptions& o) {
  if (o.resume.empty()) return std::nullopt;
  nn::CheckpointInfo resumed = nn::read_checkpoint_info(o.resume);
  restore_from_checkpoint(ex, o, resumed);
  if (o.steps < resumed.step)
    throw FlagError("--resume " + o.resume + ": the checkpoint is at step " + std::to_string(resumed.step) +
                    ", past --steps " + std::to_string(o.steps) + ": there is nothing to train (give --steps above " +
                    std::to_string(resumed.step) + ", or leave it out to continue to the recorded --steps)");
  return resumed;
}

// --seeds N: the same run for seeds --seed .. --seed + N - 1 (init, data and batches), then the
// mean and standard deviation of the final figures.
void train_seeds(Experiment& ex, TrainOptions& o, nn::ModelConfig config, Clock::time_point program_start) {
  std::vector<double> losses, gaps;
  for (unsigned seed : ex.seed_list()) {
    config.seed = seed;
    std::printf("\n== seed %u ==\n", seed);
    const Final f = train_one(ex, o, config, std::nullopt, program_start);
    losses.push_back(f.val_loss);
    gaps.push_back(f.gap);
    if (interrupt_signal()) break;
  }
  std::printf("\nover %zu seeds (%u..%u, mean ± sd): validation loss %s", losses.size(), ex.seed_list().front(),
              ex.seed_list().front() + static_cast<unsigned>(losses.size()) - 1, fmt(stat_of(losses), 4).c_str());
  if (std::isfinite(gaps.front())) std::printf(", gap %s nats", fmt(stat_of(gaps), 4).c_str());
  std::printf("\n");
}

// train's flags: the model flags with train's own defaults, then the training, output and sampling flags.
void add_train_flags(Experiment& ex, TrainOptions& o) {
  // The defaults: a small model on an order-2 Markov chain over 16 tokens (256 contexts, so attention
  // to the previous token is needed), which gets within 0.15 nats of the entropy rate in under a
  // minute of one core (measured: 0.08 above the floor after 1500 steps).
  ex.model.vocab = 16, ex.model.d_model = 32, ex.model.heads = 2, ex.model.layers = 2, ex.model.seq = 32;
  ex.model.batch = 32;
  ex.add_model_flags();
  ex.draws_graph_at_step = true;
  add_training_flags(ex.app, o, {"--steps", "--clip", "--eval-batches"});
  describe(ex.app, "--steps", "total training steps (a resumed run continues up to this)");
  describe(ex.app, "--eval-batches", "validation batches averaged per evaluation");
  add_flag(ex.app, "--lr", o.lr, "peak learning rate", RealRange::above(0));
  add_flag(ex.app, "--warmup", o.warmup, "linear warmup steps", Whole{0});
  add_flag(ex.app, "--schedule", o.schedule, "learning-rate schedule (cosine: to 0.1 lr at --schedule-steps)",
           one_of({"constant", "warmup", "inverse_sqrt", "inverse-sqrt", "rsqrt", "cosine"}));
  add_flag(ex.app, "--schedule-steps", o.schedule_steps, "the schedule's length N: cosine decays to 0.1 lr at step N",
           Whole{0, Whole::no_max, "0: --steps"});
  add_optimizer_flags(ex.app, o.opt, true);
  add_flag(ex.app, "--weight-decay", o.opt.weight_decay, "L2 (sgd, adam) or decoupled (adamw) weight decay", RealRange::at_least(0));
  add_corpus_flags(ex.app, o.corpus, true);
  add_flag(ex.app, "--eval-every", o.eval_every, "steps between validation evaluations",
           Whole{0, Whole::no_max, "0: only at the end"});
  add_flag(ex.app, "--out", o.out, "directory for train.csv (step, loss, lr, grad_norm, tokens_per_s; with --z-loss also "
           "mean_log_z_sq, the z-loss term over C; loss is always the CE) and eval.csv");
  add_flag(ex.app, "--save", o.save, "save a checkpoint to this directory after training");
  add_flag(ex.app, "--resume", o.resume, "resume from the checkpoint in this directory", existing_directory());
  add_flag(ex.app, "--dump", o.dump, "write weights, gradients, batch and loss of one fresh batch to this directory");
  add_flag(ex.app, "--sample", o.sample, "print this many generated characters after training",
           Whole{0, 10000000, "0: none"});
  add_flag(ex.app, "--temperature", o.temperature, "sampling temperature",
           RealRange::at_least(0, "0: greedy, always the most likely token"));
  ex.seeds = 1;
  add_flag(ex.app, "--seeds", ex.seeds, "train seeds --seed .. --seed + N - 1 in turn and print the mean ± sd of the "
           "final validation loss and gap (outputs, --resume and --sample take one seed)", Whole{1, 1000});
  ex.add_html_flags();
  ex.dump_at_init = false;
}

}  // namespace

int main(int argc, char** argv) {
  const auto program_start = Clock::now();
  Experiment ex("train", "Trains a TransformerLM on a Markov corpus (default) or a text file's characters.");
  TrainOptions o;
  add_train_flags(ex, o);
  ex.check_flags = [&]() -> std::string {
    if (!ex.graph.empty() && !o.resume.empty())
      return "--graph draws a model trained from initialization (the fresh model, or with --graph-step N this run's "
             "step N), not a checkpoint's: leave out --resume";
    if (ex.graph_step > 0 && ex.graph_step >= o.steps)
      return "--graph-step " + std::to_string(ex.graph_step) + " is not below --steps " + std::to_string(o.steps) +
             ": it draws one of the run's steps 0 .. " + std::to_string(o.steps - 1);
    return "";
  };
  return ex.main(argc, argv, [&] {
    if (ex.seeds > 1)
      for (const char* one_run : {"--out", "--save", "--resume", "--dump", "--html", "--html-add", "--sample"})
        if (ex.app.get_option(one_run)->count() > 0)
          throw FlagError(std::string(one_run) + " is of one run; leave it out of --seeds " + std::to_string(ex.seeds));
    // Every output is checked before any work: nothing the program did not write is replaced.
    if (!o.out.empty()) claim_output_dir(o.out, "--out", {"train", "out"});
    if (!o.save.empty()) check_output_dir(o.save, "--save", {"train", "checkpoint"});
    if (!o.dump.empty()) check_output_dir(o.dump, "--dump", {"train", "dump"});
    o.schedule = nn::to_string(nn::parse_schedule(o.schedule));  // one name for each: rsqrt is inverse_sqrt
    const std::optional<nn::CheckpointInfo> resumed = resume(ex, o);
    if (o.schedule_steps == 0) o.schedule_steps = o.steps;  // recorded so: a resumed run keeps the schedule
    nn::ModelConfig config = resumed ? resumed->config : ex.model.config();  // its seed too: data and batches
    if (ex.graph_step > 0) {  // --graph FILE --graph-step N: the pass of step N of this training run, drawn
      draw_graph_at_step(ex, o, config);
      return;
    }
    if (ex.seeds == 1) train_one(ex, o, config, resumed, program_start);
    else train_seeds(ex, o, config, program_start);
  });
}
