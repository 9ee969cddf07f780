// paths_training: the gradient by path length, LayerNorm's backward by term and each block's Jacobian
// spectrum over the first steps of training, in the lesson's setting (docs/lesson.md: 6 layers, d 32,
// the order-2 Markov corpus over 16 tokens, Adam(0.9, 0.98) at lr 1e-2): Post-LN without warmup, the
// run that gets stuck, against Post-LN with a 100-step warmup and Pre-LN, the runs that train.
//
// At each step t of --profile-steps (after t updates; t = 0 is initialization) every run is measured on
// one fixed held-out probe batch (the same for every step of a seed), on a tape of its own:
//   the path-length profile (analysis/paths.hpp, docs/gradient-paths.md) of the embedding output and of
//     each block's parameters: the share of path length k, <g_k, g> / |g|^2, the mean path length, the
//     emb gain |g(emb)| / |g(top)| and the skip gain |g_0(emb)| / |g(top)| (the table: the embedding and
//     block 0; profile.csv: every block, every k);
//   each norm's backward by term (analysis/ln_terms.hpp), relative to |g| = |dL/dy| at its output: the
//     table prints the mean over the norms on the residual stream, the CSV every site;
//   each block's largest Jacobian singular values over the probe's first sequence
//     (analysis/block_spectrum.hpp: Lanczos on J^T J, with the central difference's error stated).
// Every number printed is a mean ± sample std over the seeds.
//
//   build/bin/paths_training                          post and pre, warmups 0 and 100, 3 seeds, 100 steps
//   build/bin/paths_training --placements post --warmups 0,20,100 --profile-steps 0-30
#include "experiments/lib/experiment.hpp"
#include "analysis/block_spectrum.hpp"
#include "analysis/ln_terms.hpp"
#include "analysis/paths.hpp"
#include "explorer/recorder.hpp"

namespace {

struct Options : TrainingOptions {  // --steps 100
  std::vector<std::size_t> warmups = {0, 100};
  double lr = 1e-2;
  std::string profile_steps = "0,1,2,3,5,10,20,30,50,100";
  nn::CorpusOptions corpus;  // the Markov corpus unless --text
  OptimizerSetup opt;        // Adam(0.9, 0.98, eps 1e-8) unless the flags say otherwise
};

// What one run measured at one step of --profile-steps.
struct Profile {
  std::size_t step = 0;
  double loss = NAN;                                  // the probe batch's cross-entropy
  double emb_gain = NAN, skip_gain = NAN;             // |g(emb)| / |g(top)|, |g_0(emb)| / |g(top)|
  double emb_share0 = NAN, emb_length = NAN;          // share of k = 0, mean path length at the embedding
  double block0_share1 = NAN, block0_length = NAN;    // share of k = 1, mean path length of block 0's parameters
  std::vector<std::vector<double>> norm, share;       // [node][k]: |g_k| and <g_k, g> / |g|^2, k = 0 .. 2L;
                                                      // node 0 the embedding output, node 1 + l block l's parameters
  std::vector<double> length;                         // [node]: the mean path length
  std::vector<std::string> site;                      // every norm site, in forward order
  std::vector<int> on_stream;                         // 1 where the site reads the residual stream
  std::vector<double> g, scale, center, radial, dx;   // per site: |dL/dy| and the terms' norms
  std::vector<std::vector<double>> sigma;             // [block][i]: the largest singular values of its Jacobian
  std::vector<double> jvp_error;                      // [block]: the central difference's error estimate
  std::vector<int> converged;                         // [block]: 1 when Lanczos met its tolerance
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Profile, step, loss, emb_gain, skip_gain, emb_share0, emb_length, block0_share1,
                                   block0_length, norm, share, length, site, on_stream, g, scale, center, radial, dx, sigma,
                                   jvp_error, converged)

struct TrainingRun {
  std::vector<Profile> profiles;  // at the --profile-steps reached (a run that blew up stops early)
  double final_loss = NAN;        // held-out, after the last step
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainingRun, profiles, final_loss)

// The measures of `model` at its current weights on `probe`, on a tape of its own.
Profile measure(nn::TransformerLM& model, const nn::Batch& probe, std::size_t step) {
  Tape tape;
  TapeScope scope(tape);
  tape.accumulate_into_parameters = false;  // the training's gradients are not touched
  const Var loss = model.loss(probe.inputs, probe.targets);
  const PathProfile p = path_profile(model, loss);
  loss.backward();  // the ordinary gradient, for the norms' terms
  Profile r;
  r.step = step;
  r.loss = loss.value()();
  r.emb_gain = p.emb.total / p.top.total;
  r.skip_gain = p.skip_gain;
  std::vector<const PathSplit*> nodes = {&p.emb};  // the embedding output, then each block's parameters
  for (const PathSplit& block : p.blocks) nodes.push_back(&block);
  for (const PathSplit* node : nodes)
    r.norm.push_back(node->norm), r.share.push_back(node->share), r.length.push_back(node->mean_length);
  r.emb_share0 = p.emb.share.at(0);
  r.emb_length = p.emb.mean_length;
  r.block0_share1 = p.blocks.at(0).share.at(1);
  r.block0_length = p.blocks.at(0).mean_length;
  for (const NormSiteTerms& t : norm_site_terms(model)) {
    r.site.push_back(t.name), r.on_stream.push_back(t.on_stream ? 1 : 0);
    r.g.push_back(t.g), r.scale.push_back(t.scale), r.center.push_back(t.center);
    r.radial.push_back(t.radial), r.dx.push_back(t.dx);
  }
  std::vector<Array> inputs;  // each block's input, the probe's first sequence (1, T, C)
  for (const auto& block : model.blocks)
    inputs.push_back(xt::view(block->last.input.value(), xt::range(0, 1), xt::all(), xt::all()));
  for (std::size_t l = 0; l < model.blocks.size(); ++l) {
    const BlockSpectrum s = block_spectrum(*model.blocks[l], inputs[l]);
    r.sigma.push_back(s.sigma), r.jvp_error.push_back(s.jvp_error), r.converged.push_back(s.converged ? 1 : 0);
  }
  return r;
}

// One run; with --html, the first seed's is recorded for the explorer page.
TrainingRun train(const ModelOptions& m, std::size_t warmup, const nn::Corpus& corpus, const Options& o,
                  const std::vector<std::size_t>& at, Tick& tick, Experiment& ex, const Cell& cell) {
  nn::TransformerLM model(m.config());
  const auto rec = cell["seed"] == 0 ? ex.recorder(cell.grid->describe(cell.index), model) : nullptr;
  const std::unique_ptr<nn::Optimizer> optimizer = o.opt.make(model);
  nn::StepSetup setup{&corpus.data, m.batch, m.seq, m.seed,
                      o.opt.with_hold({nn::ScheduleKind::warmup, o.lr, warmup, o.steps, 0.1}), o.clip,
                      step_hooks(model, rec.get())};
  std::mt19937_64 probe_rng = nn::rng_for(m.seed, 0, nn::RngPurpose::probe);
  const nn::Batch probe = corpus.data.batch(nn::Split::validation, m.batch, m.seq, probe_rng);
  TrainingRun run;
  std::size_t next = 0;  // the next profile step
  for (std::size_t step = 0; step <= o.steps; ++step) {
    if (next < at.size() && at[next] == step) run.profiles.push_back(measure(model, probe, step)), ++next;
    if (step == o.steps) break;
    const nn::StepResult r = nn::train_step(model, *optimizer, setup, step);
    if (!r.finite()) {
      refuse_first_step(r, step, o.opt.loss_term_flag());
      return run;
    }
    tick(1, "loss " + fmt(r.loss));
  }
  run.final_loss = nn::evaluate(model, corpus.data, m.batch, m.seq, o.eval_batches, m.seed);
  if (rec) {
    rec->run().facts = {{"program", "paths_training"}, {"run", cell.grid->describe(cell.index)},
                        {"data", corpus.name}, {"held-out loss", fmt(run.final_loss)}};
    ex.add_run(cell.index, rec->take());
  }
  return run;
}

// ---- the report ----

struct RunKey {
  std::string placement;
  std::size_t warmup;
  std::string label() const { return placement + (warmup ? ", warmup " + std::to_string(warmup) : ", no warmup"); }
};

struct Report {
  std::vector<RunKey> keys;                           // in table order
  std::vector<std::vector<const TrainingRun*>> runs;  // [key][seed]
  std::vector<std::size_t> at;                        // the profile steps
};

// f(profile i) over the seeds of run key r that reached it.
template <class F>
std::vector<double> over_seeds(const Report& rep, std::size_t r, std::size_t i, F f) {
  std::vector<double> v;
  for (const TrainingRun* run : rep.runs[r])
    if (i < run->profiles.size()) v.push_back(f(run->profiles[i]));
  return v;
}

// The mean of `term` / g over the norms on the stream (NaN when there are none).
double stream_mean(const Profile& p, const std::vector<double>& term) {
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t s = 0; s < p.site.size(); ++s)
    if (p.on_stream[s]) sum += term[s] / p.g[s], ++n;
  return n ? sum / static_cast<double>(n) : NAN;
}

Table profile_table(const Report& rep) {
  Table t({"run", "step", "probe loss", "emb gain", "skip gain", "emb share k=0", "emb mean k", "block0 share k=1",
           "block0 mean k"});
  for (std::size_t r = 0; r < rep.keys.size(); ++r)
    for (std::size_t i = 0; i < rep.at.size(); ++i) {
      auto cell = [&](double Profile::*m) { return finite_stat(over_seeds(rep, r, i, [&](const Profile& p) { return p.*m; }), 3); };
      t.add_row({rep.keys[r].label(), std::to_string(rep.at[i]), cell(&Profile::loss), cell(&Profile::emb_gain),
                 cell(&Profile::skip_gain), cell(&Profile::emb_share0), cell(&Profile::emb_length),
                 cell(&Profile::block0_share1), cell(&Profile::block0_length)});
    }
  return t;
}

Table norm_table(const Report& rep) {
  Table t({"run", "step", "|scale|/|g|", "|center|/|g|", "|radial|/|g|", "|dx|/|g|"});
  for (std::size_t r = 0; r < rep.keys.size(); ++r)
    for (std::size_t i = 0; i < rep.at.size(); ++i) {
      auto cell = [&](std::vector<double> Profile::*m) {
        return finite_stat(over_seeds(rep, r, i, [&](const Profile& p) { return stream_mean(p, p.*m); }), 3);
      };
      t.add_row({rep.keys[r].label(), std::to_string(rep.at[i]), cell(&Profile::scale), cell(&Profile::center),
                 cell(&Profile::radial), cell(&Profile::dx)});
    }
  return t;
}

Table spectrum_table(const Report& rep, std::size_t blocks) {
  std::vector<std::string> columns = {"run", "step"};
  for (std::size_t l = 0; l < blocks; ++l) columns.push_back("block" + std::to_string(l) + " sigma1");
  columns.push_back("max jvp error");
  Table t(columns);
  for (std::size_t r = 0; r < rep.keys.size(); ++r)
    for (std::size_t i = 0; i < rep.at.size(); ++i) {
      std::vector<std::string> row = {rep.keys[r].label(), std::to_string(rep.at[i])};
      for (std::size_t l = 0; l < blocks; ++l)
        row.push_back(finite_stat(over_seeds(rep, r, i, [&](const Profile& p) { return p.sigma.at(l).at(0); }), 3));
      double worst = 0.0;
      for (double e : over_seeds(rep, r, i, [](const Profile& p) { return *std::max_element(p.jvp_error.begin(), p.jvp_error.end()); }))
        worst = std::max(worst, e);
      row.push_back(fmt(worst, 2));
      t.add_row(row);
    }
  return t;
}

// Long form, one row per run, seed, profile step and norm site.
Table norm_csv(const Report& rep, unsigned first_seed) {
  Table t({"placement", "warmup", "seed", "step", "site", "on_stream", "g_norm", "scale_norm", "center_norm",
           "radial_norm", "dx_norm"});
  for (std::size_t r = 0; r < rep.keys.size(); ++r)
    for (std::size_t s = 0; s < rep.runs[r].size(); ++s)
      for (const Profile& p : rep.runs[r][s]->profiles)
        for (std::size_t i = 0; i < p.site.size(); ++i)
          t.add_row({rep.keys[r].placement, std::to_string(rep.keys[r].warmup), std::to_string(first_seed + s),
                     std::to_string(p.step), p.site[i], std::to_string(p.on_stream[i]), fmt(p.g[i], 10),
                     fmt(p.scale[i], 10), fmt(p.center[i], 10), fmt(p.radial[i], 10), fmt(p.dx[i], 10)});
  return t;
}

// Long form, one row per run, seed, profile step and block: the singular values and their checks.
Table spectrum_csv(const Report& rep, unsigned first_seed) {
  Table t({"placement", "warmup", "seed", "step", "block", "sigma1", "sigma2", "sigma3", "jvp_error", "converged"});
  for (std::size_t r = 0; r < rep.keys.size(); ++r)
    for (std::size_t s = 0; s < rep.runs[r].size(); ++s)
      for (const Profile& p : rep.runs[r][s]->profiles)
        for (std::size_t l = 0; l < p.sigma.size(); ++l) {
          std::vector<std::string> row = {rep.keys[r].placement, std::to_string(rep.keys[r].warmup),
                                          std::to_string(first_seed + s), std::to_string(p.step), std::to_string(l)};
          for (std::size_t i = 0; i < 3; ++i) row.push_back(i < p.sigma[l].size() ? fmt(p.sigma[l][i], 10) : "");
          row.push_back(fmt(p.jvp_error[l], 4));
          row.push_back(std::to_string(p.converged[l]));
          t.add_row(row);
        }
  return t;
}

// Long form of the profile: one row per run, seed, profile step, node (emb, block0, block1, ...) and path
// length k.
Table profile_csv(const Report& rep, unsigned first_seed) {
  Table t({"placement", "warmup", "seed", "step", "probe_loss", "emb_gain", "skip_gain", "node", "mean_length", "k",
           "norm", "share"});
  for (std::size_t r = 0; r < rep.keys.size(); ++r)
    for (std::size_t s = 0; s < rep.runs[r].size(); ++s)
      for (const Profile& p : rep.runs[r][s]->profiles)
        for (std::size_t node = 0; node < p.share.size(); ++node)
          for (std::size_t k = 0; k < p.share[node].size(); ++k)
            t.add_row({rep.keys[r].placement, std::to_string(rep.keys[r].warmup), std::to_string(first_seed + s),
                       std::to_string(p.step), fmt(p.loss, 10), fmt(p.emb_gain, 10), fmt(p.skip_gain, 10),
                       node == 0 ? "emb" : "block" + std::to_string(node - 1), fmt(p.length[node], 10),
                       std::to_string(k), fmt(p.norm[node][k], 10), fmt(p.share[node][k], 10)});
  return t;
}

// y(step) per run, x = step + 1 on a log axis (step 0, initialization, at x = 1).
void draw_over_steps(const Report& rep, const std::string& title, const std::string& ylabel, bool log_y,
                     const std::function<double(const Profile&)>& f, const std::string& dir, const std::string& name) {
  Plot plot{title, "step + 1 (log scale)", ylabel, true, log_y, {}};
  std::vector<double> x;
  for (std::size_t s : rep.at) x.push_back(static_cast<double>(s + 1));
  for (std::size_t r = 0; r < rep.keys.size(); ++r)
    plot.series.push_back(stat_line(rep.keys[r].label(), x, [&](std::size_t i) { return over_seeds(rep, r, i, f); }));
  draw(plot, dir, name);
}

void report(const Report& rep, const nn::Corpus& corpus, std::size_t blocks, unsigned first_seed, const std::string& dir) {
  std::printf("\nthe path-length profile on the probe batch: emb gain = |g(emb)| / |g(top)|; skip gain = |g_0(emb)| / "
              "|g(top)|; share k = <g_k, g> / |g|^2; mean k = sum_k k |g_k| / sum_k |g_k|\n%s",
              profile_table(rep).to_text().c_str());
  std::printf("\nthe norms' backward by term, mean over the norms on the residual stream, relative to |g| = |dL/dy| "
              "(every site: norm_terms.csv)\n%s", norm_table(rep).to_text().c_str());
  std::printf("\nthe largest singular value of each block's input-output Jacobian over the probe's first sequence "
              "(top 3: spectrum.csv)\n%s", spectrum_table(rep, blocks).to_text().c_str());
  Table final_losses({"run", "held-out loss after the last step"});
  for (std::size_t r = 0; r < rep.keys.size(); ++r) {
    std::vector<double> v;
    for (const TrainingRun* run : rep.runs[r]) v.push_back(run->final_loss);
    final_losses.add_row({rep.keys[r].label(), finite_stat(v, 4)});
  }
  std::printf("\nheld-out loss (unigram entropy H1 %.4f, the chain's entropy rate %.4f)\n%s", corpus.unigram,
              corpus.floor, final_losses.to_text().c_str());
  profile_csv(rep, first_seed).write_csv(std::filesystem::path(dir) / "profile.csv");
  norm_csv(rep, first_seed).write_csv(std::filesystem::path(dir) / "norm_terms.csv");
  spectrum_csv(rep, first_seed).write_csv(std::filesystem::path(dir) / "spectrum.csv");
  draw_over_steps(rep, "the identity path's share of the embedding's gradient", "share of k = 0", false,
                  [](const Profile& p) { return p.emb_share0; }, dir, "emb_share0");
  draw_over_steps(rep, "mean path length of the embedding's gradient", "sum_k k |g_k| / sum_k |g_k|", false,
                  [](const Profile& p) { return p.emb_length; }, dir, "emb_mean_length");
  draw_over_steps(rep, "block 0's largest Jacobian singular value", "sigma_1", true,
                  [](const Profile& p) { return p.sigma.at(0).at(0); }, dir, "block0_sigma1");
  draw_over_steps(rep, "the stream norms' backward gain", "mean |dL/dx| / |dL/dy|", true,
                  [](const Profile& p) { return stream_mean(p, p.dx); }, dir, "norm_gain");
  std::printf("\nwrote %s/{profile,norm_terms,spectrum}.csv and the plots emb_share0, emb_mean_length, block0_sigma1, "
              "norm_gain (.png, .svg)\n", dir.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("paths_training", "The gradient split by path length, the norms' backward by term and each block's "
                "Jacobian spectrum over the first training steps: Post-LN's stuck run against the runs that train.",
                "out/paths_training");
  ex.model = stability_model();
  ex.placements = {"post", "pre"};
  Options o;
  o.steps = 100;
  add_flag(ex.app, "--warmups", o.warmups, "linear-warmup lengths W in steps, 0: none (comma-separated)", Whole{0});
  add_flag(ex.app, "--lr", o.lr, "peak learning rate (constant after the warmup)", RealRange::above(0));
  add_training_flags(ex.app, o, {"--steps", "--eval-batches", "--clip"});
  add_flag(ex.app, "--profile-steps", o.profile_steps, "the steps measured (after that many updates; 0: at "
           "initialization): 0,1,2,5 or 0-10 or 0:100:10, none past --steps");
  add_corpus_flags(ex.app, o.corpus, true);
  add_optimizer_flags(ex.app, o.opt, true);
  describe(ex.app, "--placements", "placements to train (comma-separated)");
  ex.check_flags = [&] {
    const std::vector<std::size_t> at = explorer::parse_steps(o.profile_steps, "--profile-steps");
    return at.back() > o.steps ? o.at_most_steps("--profile-steps", at.back()) : std::string();
  };
  return ex.main(argc, argv, [&] {
    const ModelOptions& mo = ex.model;
    const std::vector<std::size_t> at = explorer::parse_steps(o.profile_steps, "--profile-steps");
    nn::ModelConfig largest = mo.config();
    largest.vocab = o.corpus.text.empty() ? mo.vocab : 256;
    ex.check_memory(largest, 2, true, ex.placements.size() * o.warmups.size() * ex.seeds,
                    nn::corpus_bytes(o.corpus, mo.vocab));
    const nn::Corpus corpus = nn::build_corpus(o.corpus, mo.vocab, mo.seed, mo.seq);
    std::printf("paths_training: %s (vocab %zu); layers %zu, d_model %zu, heads %zu, batch %zu x seq %zu; %s, lr %g, "
                "linear warmup then constant; %zu steps; measured at steps %s on one held-out probe batch per seed; "
                "seeds %u..%zu\n",
                corpus.name.c_str(), corpus.data.vocab(), mo.layers, mo.d_model, mo.heads, mo.batch, mo.seq,
                o.opt.text().c_str(), o.lr, o.steps, o.profile_steps.c_str(), mo.seed, mo.seed + ex.seeds - 1);
    Grid grid;
    grid.axis("placement", ex.placements).axis("warmup", labels(o.warmups)).axis("seed", labels(ex.seed_list()));
    const auto runs = run_steps<TrainingRun>(ex, grid, o.steps, [&](const Cell& c, Tick& tick) {
      ModelOptions m = ex.cell_model(c);
      m.vocab = corpus.data.vocab();
      return train(m, o.warmups[c["warmup"]], corpus, o, at, tick, ex, c);
    });
    if (!runs) return;
    Report rep{{}, {}, at};
    for (std::size_t p = 0; p < ex.placements.size(); ++p)
      for (std::size_t w = 0; w < o.warmups.size(); ++w) {
        rep.keys.push_back({ex.placements[p], o.warmups[w]});
        rep.runs.push_back(seeds_of(*runs, grid, {p, w}));
      }
    report(rep, corpus, mo.layers, mo.seed, ex.out);
  });
}
