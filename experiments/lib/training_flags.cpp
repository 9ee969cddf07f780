#include "experiments/lib/training_flags.hpp"

#include <CLI/CLI.hpp>

#include "engine/error.hpp"
#include "experiments/lib/flags.hpp"
#include "nn/data/dataset.hpp"

namespace gs::experiments {

namespace {

// "none" and nn's interventions: what --intervene takes, each element of its list.
std::vector<std::string> intervention_choices() {
  std::vector<std::string> names = {"none"};
  for (const std::string& n : nn::intervention_names()) names.push_back(n);
  return names;
}

}  // namespace

void add_optimizer_flags(CLI::App& app, OptimizerSetup& s, bool with_choice) {
  if (with_choice)
    add_flag(app, "--optimizer", s.optimizer, "sgd (momentum 0.9), adam, adamw or radam (rectified Adam, Liu et al. 2019)",
             one_of({"sgd", "adam", "adamw", "radam"}));
  add_flag(app, "--adam-beta1", s.beta1, "Adam's (and RAdam's) first-moment decay beta1", RealRange::within(0, 1 - 1e-9));
  add_flag(app, "--adam-beta2", s.beta2, "Adam's (and RAdam's) second-moment decay beta2", RealRange::within(0, 1 - 1e-9));
  add_flag(app, "--adam-eps", s.eps, "Adam's (and RAdam's) eps, added to the root of the second moment", RealRange::above(0));
  add_flag(app, "--adam-v0", s.adam_v0, "Adam's (and RAdam's) second moment at the start: zero, or g0sq (GI-Adam, "
           "Kalra & Barkeshli 2024: v_0 = g_0^2 and no bias correction of v)", one_of({"zero", "g0sq"}));
  add_flag(app, "--z-loss", s.z_loss, "C of the z-loss: the loss trained is mean CE + C * mean over positions of "
           "(log Z)^2, log Z the logsumexp of the logits (0: none); the CE is what is reported and judged",
           RealRange::at_least(0, "0: none"));
  add_flag(app, "--hold", s.hold, "steps at lr 0 before the schedule starts: gradients computed and Adam's moments "
           "updated, no weight moved (Liu et al. 2019)", Whole{0, Whole::no_max, "0: none"});
  add_flag(app, "--intervene", s.intervene, "backward-pass interventions in every block, comma-separated "
           "(nn/interventions.hpp; the forward pass is unchanged)", one_of(intervention_choices()))
      ->type_name("NAME[,NAME...]");
}

void add_corpus_flags(CLI::App& app, nn::CorpusOptions& c, bool with_text) {
  if (with_text)
    add_flag(app, "--text", c.text, "a text file to train on, one token per distinct byte (default: Markov corpus)",
             regular_file(nn::text_dataset_max_bytes));
  add_flag(app, "--markov-order", c.order, "Markov corpus: tokens of context", Whole{1});
  add_flag(app, "--markov-concentration", c.concentration, "Markov corpus: Dirichlet concentration of each context's "
           "next-token distribution (smaller: lower entropy)", RealRange::above(0));
}

std::string TrainingOptions::at_most_steps(const std::string& flag, std::size_t value) const {
  if (value <= steps) return "";
  return flag + " " + std::to_string(value) + " is more than --steps " + std::to_string(steps);
}

std::string TrainingOptions::warmups_below_steps(const std::vector<std::size_t>& warmups) const {
  for (std::size_t w : warmups)
    if (w > 0 && w >= steps)
      return "--warmups " + std::to_string(w) + " is not less than --steps " + std::to_string(steps) +
             ": that run would end inside its warmup, where a verdict means nothing";
  return "";
}

void add_training_flags(CLI::App& app, TrainingOptions& t, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (name == "--steps") add_flag(app, name, t.steps, "training steps per run", Whole{1});
    else if (name == "--eval-batches") add_flag(app, name, t.eval_batches, "held-out batches averaged for the final loss", Whole{1, 100000});
    else if (name == "--clip") add_flag(app, name, t.clip, "clip the global gradient norm to this", RealRange::at_least(0, "0: no clipping"));
    else if (name == "--margin") add_flag(app, name, t.margin, "verdict margin in nats: diverged above log V + margin, stuck above H1 - margin",
                                           RealRange::at_least(0));
    else if (name == "--window") add_flag(app, name, t.window, "steps averaged per point of the loss curves", Whole{1});
    else throw Error("add_training_flags: " + name + " is no training flag");
  }
}

}  // namespace gs::experiments
