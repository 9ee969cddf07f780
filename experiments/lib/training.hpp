// What the binaries that train share besides nn's training loop (nn/train.hpp): the optimizer as the
// flags make it, the hooks every experiment's steps run (a stop on SIGINT/SIGTERM, the --html
// recorder), and the verdict of a finished run.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "nn/data/corpus.hpp"
#include "nn/interventions.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"
#include "nn/train.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::explorer {
class RunRecorder;  // explorer/recorder.hpp
}

namespace gs::experiments {

// The optimizer and the backward-pass interventions of a run, as the flags --optimizer, --adam-beta1,
// --adam-beta2, --adam-eps, --hold and --intervene give them (add_optimizer_flags,
// experiments/lib/training_flags.hpp): every binary that trains makes its optimizer here, so each
// gets the flags the same way. The defaults are warmup's and dynamics' Adam(0.9, 0.98, eps 1e-8); train
// sets beta2 0.999 (make_optimizer's default) before adding the flags.
struct OptimizerSetup {
  std::string optimizer = "adam";  // sgd, adam, adamw, radam
  double beta1 = 0.9, beta2 = 0.98, eps = 1e-8;
  double weight_decay = 0.0;
  std::size_t hold = 0;                   // Schedule::hold: steps at lr 0 that still update the moments
  std::string adam_v0 = "zero";           // --adam-v0: zero, or g0sq (GI-Adam, nn::AdamOptions::v0_g0sq)
  double z_loss = 0.0;                    // --z-loss C: TransformerLM::z_loss (the loss trained; CE is reported)
  std::vector<std::string> intervene{"none"};  // nn::parse_interventions names; "none" (or empty): none

  nn::Interventions interventions() const;
  // Switches the interventions on in `model` (TransformerLM::set_interventions; throws gs::Error when
  // the model refuses them), sets its z_loss, and returns the optimizer of its parameters.
  std::unique_ptr<nn::Optimizer> make(nn::TransformerLM& model) const;
  // `schedule` with this hold; its total (the cosine's length) shortened by the hold, so a run of
  // S steps still ends its cosine at step S.
  nn::Schedule with_hold(nn::Schedule schedule) const;
  // "--z-loss 1e+300" with a z-loss, else "": the flag that shapes the loss of a run's first step
  // (refuse_first_step's suspect).
  std::string loss_term_flag() const;
  // "adam(beta1 0.9, beta2 0.98, eps 1e-08)", with ", v0 g0sq", ", hold 20" and ", intervene detach-skip" when set.
  std::string text() const;
};

// The hooks of an experiment's steps (nn::StepSetup::hooks): before each step, throws Interrupted
// (interrupt.hpp) if SIGINT or SIGTERM arrived; with a recorder (--html), records each step's pass, update,
// rate and stability measures (the tape then keeps the contributions the recorder reads).
nn::StepHooks step_hooks(const nn::TransformerLM& model, explorer::RunRecorder* recorder = nullptr);

// ---- a step that is not finite ----

// What blew up, and when: "the loss is inf at step 0", "the gradient norm is inf at step 3 (loss 2.3104)".
std::string not_finite_text(const nn::StepResult& r, std::size_t step);

// A run whose first step (step 0) has a loss or gradient norm that is not finite cannot train at any
// rate: no update has been taken yet, so no lr, weight decay or schedule is at play, and "diverged"
// would report a number the training did not produce. Throws gs::Error then, naming `suspects` (the
// flags or row that shape the first step: "--z-loss 1e+300"; "" names the initialization); does
// nothing for a finite step or a later one (a blow-up that the training made).
void refuse_first_step(const nn::StepResult& r, std::size_t step, const std::string& suspects);

// ---- verdicts ----

// How a training run ended, judged from its final held-out loss:
//   diverged  the loss is NaN/Inf, or above uniform + margin: worse than predicting every token with
//             probability 1/V
//   stuck     above stuck - margin, `stuck` being the unigram entropy H1 (<= log V): no better than a model
//             that ignores the context and predicts the token frequencies
//   trained   below stuck - margin
enum class Verdict { trained, stuck, diverged };
std::string to_string(Verdict verdict);

struct Thresholds {
  double uniform = 0.0;  // log V
  double stuck = 0.0;    // H1
  double margin = 0.05;  // nats
};

Verdict verdict_of(double final_loss, const Thresholds& thresholds);

// Refuses (FlagError) a --margin that leaves "trained" to no loss a model can reach on `corpus`: a run is
// stuck above H1 - margin, and no model goes below the corpus's floor (the Markov chain's entropy rate;
// 0, the least a cross-entropy can be, for a text file), so H1 - margin must be above it.
void check_margin(const nn::Corpus& corpus, double margin);

// ---- the frozen-blocks baseline ----

// The parameters a frozen-blocks run keeps at their initial values: every block's ("blocks.*") and
// the final norm's ("ln_f.*"), so that only the embeddings and the head learn. Such a run is the
// baseline of causes' column "beat frozen" and of the explorer's verdicts: a run whose blocks learned
// something useful ends below it.
bool is_block_parameter(const std::string& name);
// Sets the lr scale of every block parameter of `optimizer` to 0: its updates leave them at their values.
void freeze_blocks(nn::Optimizer& optimizer);
// Whether a run beats frozen blocks: its final loss is below the lowest final loss of the frozen-blocks
// runs it is judged against minus the margin (false when either loss is NaN).
bool beats_frozen(double final_loss, double frozen_lowest, double margin);

// The verdicts of one cell's seeds: "trained", or "2 stuck, 1 trained" when they disagree; with
// " (NaN at step N)" when `first_nan_step` is not 0 (the first step at which a seed's loss was NaN/Inf).
std::string verdict_text(const std::vector<Verdict>& verdicts, std::size_t first_nan_step = 0);

}  // namespace gs::experiments
