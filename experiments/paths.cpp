// paths: the gradient at initialization split by path length, per placement and depth.
//
// With 2L residual sublayers, the gradient at any point of the model is a sum over the paths from the
// loss back to it, and each path goes through some of the 2L branches (the rest of the way it takes the
// skips). g_k is the sum over the paths through exactly k branches, k = 0 .. 2L, so g = g_0 + ... + g_2L;
// analysis/paths.hpp computes every g_k exactly in one graded backward sweep (docs/gradient-paths.md).
// For the embedding output (the stream's input) and block 0's parameters (all of them as one vector) it
// reports, per placement and depth L in --layers-list:
//   share[k]      <g_k, g> / |g|^2, the projection share of path length k (the shares sum to 1; the g_k
//                 are not orthogonal, so a share can be negative)
//   mean length   sum_k k |g_k| / sum_k |g_k|, the |g_k|-weighted mean path length
//   overlap       sum_k |g_k|^2 / |g|^2 (1 when the g_k are orthogonal, larger when they cancel)
//   emb gain      |g(emb)| / |g(top)|: the whole gradient at the embedding against the gradient that enters
//                 the stream at its top (the last block's output)
//   skip gain     |g_0(emb)| / |g(top)|: what the pure skip path, through no branch, does to it
// and, for each LayerNorm of the shallowest depth (every depth in ln_terms.csv), its backward split into
// its three terms (analysis/ln_terms.hpp), relative to the gradient g that reaches its output (RMSNorm's
// two: it has no center term).
//
// Every measurement: a fresh model (seed s) at init, one fresh Markov batch (seed s), the mean
// cross-entropy, one graded sweep (and one ordinary backward for the LayerNorm terms); every number
// printed is a mean ± sample std over the seeds.
//
//   build/bin/paths                                   the defaults: post and pre, L = 2, 4, 6, 12, 24, 3 seeds
//   build/bin/paths --placements post,pre,peri,deepnorm,rezero,b2t/layer/none --layers-list 2,8
#include "experiments/lib/experiment.hpp"
#include "analysis/ln_terms.hpp"
#include "analysis/paths.hpp"
#include "analysis/probe.hpp"

namespace {

// One norm site's backward by term (analysis/ln_terms.hpp): Frobenius norms.
struct LnSite {
  std::string name;
  bool on_stream = false, has_center = true;
  double g = NAN, scale = NAN, center = NAN, radial = NAN, dx = NAN;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LnSite, name, on_stream, has_center, g, scale, center, radial, dx)

// One model at init on one batch.
struct PathRun {
  double loss = NAN;
  double skip_gain = NAN;
  double top = NAN;                               // |g(top)|
  std::vector<double> emb_norm, emb_share;        // k = 0 .. 2L
  double emb_total = NAN, emb_overlap = NAN, emb_length = NAN;  // |g(emb)|, ...
  std::vector<std::vector<double>> block_norm, block_share;  // [block][k]
  std::vector<double> block_overlap, block_length;           // [block]
  std::vector<LnSite> ln_sites;                              // every LayerNorm, in forward order
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PathRun, loss, skip_gain, top, emb_norm, emb_share, emb_total, emb_overlap, emb_length,
                                   block_norm, block_share, block_overlap, block_length, ln_sites)

PathRun measure(const nn::ModelConfig& config, const nn::Batch& batch) {
  nn::TransformerLM model(config);
  Tape& tape = Tape::current();
  tape.reset();
  const Var loss = model.loss(batch.inputs, batch.targets);  // scalar: mean over (B, T)
  const PathProfile p = path_profile(model, loss);  // reads the tape only
  loss.backward();                                  // the ordinary gradient, for the LayerNorm terms
  PathRun run;
  for (const NormSiteTerms& t : norm_site_terms(model))
    run.ln_sites.push_back({t.name, t.on_stream, t.has_center, t.g, t.scale, t.center, t.radial, t.dx});
  run.loss = loss.value()();
  tape.reset();
  run.skip_gain = p.skip_gain;
  run.top = p.top.total;
  run.emb_norm = p.emb.norm;
  run.emb_share = p.emb.share;
  run.emb_total = p.emb.total;
  run.emb_overlap = p.emb.overlap;
  run.emb_length = p.emb.mean_length;
  for (const PathSplit& b : p.blocks) {
    run.block_norm.push_back(b.norm);
    run.block_share.push_back(b.share);
    run.block_overlap.push_back(b.overlap);
    run.block_length.push_back(b.mean_length);
  }
  return run;
}

using Runs = std::vector<const PathRun*>;  // one (placement, depth): a run per seed

struct Scan : GridRuns<PathRun> {
  const std::vector<std::size_t>& depths;
  const std::vector<std::string>& placements() const { return grid.labels(0); }
  Runs at(std::size_t p, std::size_t L) const { return GridRuns::seeds({p, index_in(depths, L)}); }
};

// f(run) for every seed of a cell.
template <class F>
std::vector<double> over_seeds(const Runs& runs, F f) {
  std::vector<double> v;
  for (const PathRun* r : runs) v.push_back(f(*r));
  return v;
}

// The node a report row reads: the embedding output (block -1) or block l's parameters.
struct Node {
  std::string name;  // "emb", "block0", ...
  int block;
  std::size_t b() const { return static_cast<std::size_t>(block); }
  const std::vector<double>& norm(const PathRun& r) const { return block < 0 ? r.emb_norm : r.block_norm.at(b()); }
  const std::vector<double>& share(const PathRun& r) const { return block < 0 ? r.emb_share : r.block_share.at(b()); }
  double length(const PathRun& r) const { return block < 0 ? r.emb_length : r.block_length.at(b()); }
};

const Node emb_node{"emb", -1};
const Node block0_node{"block0", 0};

// Rows: placement and depth; the measures of the embedding and block 0 (mean ± std over seeds).
Table summary_table(const Scan& s) {
  Table t({"placement", "L", "loss", "emb gain", "skip gain", "emb share k=0", "emb mean k", "emb overlap",
           "block0 share k=1", "block0 mean k", "block0 overlap"});
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (std::size_t L : s.depths) {
      const Runs r = s.at(p, L);
      auto cell = [&](double (*f)(const PathRun&), int digits = 3) { return fmt(stat_of(over_seeds(r, f)), digits); };
      t.add_row({s.placements()[p], std::to_string(L), cell([](const PathRun& x) { return x.loss; }, 4),
                 cell([](const PathRun& x) { return x.emb_total / x.top; }),
                 cell([](const PathRun& x) { return x.skip_gain; }),
                 cell([](const PathRun& x) { return x.emb_share.at(0); }),
                 cell([](const PathRun& x) { return x.emb_length; }),
                 cell([](const PathRun& x) { return x.emb_overlap; }),
                 cell([](const PathRun& x) { return x.block_share.at(0).at(1); }),
                 cell([](const PathRun& x) { return x.block_length.at(0); }),
                 cell([](const PathRun& x) { return x.block_overlap.at(0); })});
    }
  return t;
}

// Rows: path length k = 0 .. 2 max(L); columns: the share of k at each depth ("" where k > 2L).
Table share_table(const Scan& s, std::size_t p, const Node& node) {
  std::vector<std::string> columns = {"k"};
  for (std::size_t L : s.depths) columns.push_back("L=" + std::to_string(L));
  Table t(columns);
  for (std::size_t k = 0; k <= 2 * s.depths.back(); ++k) {
    std::vector<std::string> row = {std::to_string(k)};
    const auto share_k = [&](const PathRun& x) { return node.share(x).at(k); };
    for (std::size_t L : s.depths) row.push_back(k > 2 * L ? "" : fmt(stat_of(over_seeds(s.at(p, L), share_k)), 3));
    t.add_row(row);
  }
  return t;
}

// Rows: the LayerNorm sites of placement p at depth L; columns: |g| = |dL/dy| and the norms of the three
// terms of dL/dx and of their sum, relative to |g| (mean ± std over seeds).
Table ln_table(const Scan& s, std::size_t p, std::size_t L) {
  Table t({"site", "stream", "|g|", "|scale|/|g|", "|center|/|g|", "|radial|/|g|", "|dx|/|g|"});
  const Runs r = s.at(p, L);
  for (std::size_t i = 0; i < r.front()->ln_sites.size(); ++i) {
    auto col = [&](double LnSite::*m, bool relative) {
      return fmt(stat_of(over_seeds(r, [&](const PathRun& x) {
                   const LnSite& site = x.ln_sites.at(i);
                   return relative ? site.*m / site.g : site.*m;
                 })),
                 3);
    };
    const LnSite& first = r.front()->ln_sites[i];
    t.add_row({first.name, first.on_stream ? "yes" : "no", col(&LnSite::g, false), col(&LnSite::scale, true),
               first.has_center ? col(&LnSite::center, true) : "-", col(&LnSite::radial, true), col(&LnSite::dx, true)});
  }
  return t;
}

// Long form of the LayerNorm terms, one row per seed and site.
Table ln_csv(const Scan& s, unsigned first_seed) {
  Table t({"placement", "layers", "seed", "site", "norm", "on_stream", "g_norm", "scale_norm", "center_norm", "radial_norm",
           "dx_norm"});
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (std::size_t L : s.depths) {
      const Runs r = s.at(p, L);
      for (std::size_t i = 0; i < r.size(); ++i)
        for (const LnSite& x : r[i]->ln_sites)
          t.add_row({s.placements()[p], std::to_string(L), std::to_string(first_seed + i), x.name,
                     x.has_center ? "layer" : "rms", x.on_stream ? "1" : "0", fmt(x.g, 10), fmt(x.scale, 10), fmt(x.center, 10), fmt(x.radial, 10),
                     fmt(x.dx, 10)});
    }
  return t;
}

// Long form: placement, layers, node (emb, block0, block1, ...), k, |g_k| and share (mean, std), n.
Table profile_csv(const Scan& s) {
  Table t({"placement", "layers", "node", "k", "norm_mean", "norm_std", "share_mean", "share_std", "n"});
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (std::size_t L : s.depths) {
      std::vector<Node> nodes = {emb_node};
      for (std::size_t l = 0; l < L; ++l) nodes.push_back({"block" + std::to_string(l), static_cast<int>(l)});
      for (const Node& node : nodes)
        for (std::size_t k = 0; k <= 2 * L; ++k) {
          const Stat n = stat_of(over_seeds(s.at(p, L), [&](const PathRun& x) { return node.norm(x).at(k); }));
          const Stat sh = stat_of(over_seeds(s.at(p, L), [&](const PathRun& x) { return node.share(x).at(k); }));
          t.add_row({s.placements()[p], std::to_string(L), node.name, std::to_string(k), fmt(n.mean, 10), fmt(n.std, 10),
                     fmt(sh.mean, 10), fmt(sh.std, 10), std::to_string(n.n)});
        }
    }
  return t;
}

// Long form of the summary, one row per seed.
Table summary_csv(const Scan& s, unsigned first_seed) {
  Table t({"placement", "layers", "seed", "loss", "skip_gain", "top_grad_norm", "emb_grad_norm", "emb_mean_length",
           "emb_overlap",
           "block0_mean_length", "block0_overlap"});
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (std::size_t L : s.depths) {
      const Runs r = s.at(p, L);
      for (std::size_t i = 0; i < r.size(); ++i)
        t.add_row({s.placements()[p], std::to_string(L), std::to_string(first_seed + i), fmt(r[i]->loss, 10),
                   fmt(r[i]->skip_gain, 10), fmt(r[i]->top, 10), fmt(r[i]->emb_total, 10), fmt(r[i]->emb_length, 10),
                   fmt(r[i]->emb_overlap, 10),
                   fmt(r[i]->block_length.at(0), 10), fmt(r[i]->block_overlap.at(0), 10)});
    }
  return t;
}

// x = k / 2L (the fraction of the branches a path goes through), y = the share of path length k at the
// node; one line per placement and depth.
void draw_shares(const Scan& s, const Node& node, const std::string& what, const std::string& dir) {
  Plot plot{what + "'s gradient at init: projection share by path length", "k / 2L (fraction of the branches on the path)",
            "share <g_k, g> / |g|^2", false, false, {}};
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (std::size_t L : s.depths) {
      std::vector<double> x;
      for (std::size_t k = 0; k <= 2 * L; ++k) x.push_back(static_cast<double>(k) / static_cast<double>(2 * L));
      plot.series.push_back(stat_line(s.placements()[p] + ", L=" + std::to_string(L), x, [&](std::size_t k) {
        return over_seeds(s.at(p, L), [&](const PathRun& r) { return node.share(r).at(k); });
      }));
    }
  draw(plot, dir, "share_" + node.name);
}

// x = L, y = the mean path length of the embedding's and block 0's gradient, one line per placement and
// node, with the line k = L (half the branches: the mean of a path that takes each branch with odds 1/2).
void draw_lengths(const Scan& s, const std::string& dir) {
  Plot plot{"mean path length of the gradient at init", "layers L", "sum_k k |g_k| / sum_k |g_k|", false, false, {}};
  std::vector<double> x;
  for (std::size_t L : s.depths) x.push_back(static_cast<double>(L));
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (const Node* node : {&emb_node, &block0_node})
      plot.series.push_back(stat_line(s.placements()[p] + ", " + node->name, x, [&](std::size_t i) {
        return over_seeds(s.at(p, s.depths[i]), [&](const PathRun& r) { return node->length(r); });
      }));
  plot.series.push_back({"guide: k = L (half of the 2L branches)", x, x, {}});
  draw(plot, dir, "mean_length");
}

void report(const Scan& s, unsigned first_seed, const std::string& dir) {
  std::printf("\nsummary: emb gain = |g(emb)| / |g(top)|; skip gain = |g_0(emb)| / |g(top)|; share k = <g_k, g> / "
              "|g|^2; mean k = sum_k k |g_k| / sum_k |g_k|; overlap = sum_k |g_k|^2 / |g|^2 (emb: the embedding "
              "output; block0: all of block 0's parameters)\n%s",
              summary_table(s).to_text().c_str());
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (const Node* node : {&emb_node, &block0_node})
      std::printf("\n%s, %s: share of path length k, <g_k, g> / |g|^2\n%s", s.placements()[p].c_str(),
                  node->name.c_str(), share_table(s, p, *node).to_text().c_str());
  const std::size_t L0 = s.depths.front();
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    if (!s.at(p, L0).front()->ln_sites.empty()) {
      const bool layer = s.at(p, L0).front()->ln_sites.front().has_center;
      std::printf(layer ? "\n%s, L=%zu: LayerNorm backward by term, dL/dx = scale + center + radial = (1/sigma) (g_hat - "
                          "mean(g_hat) - x_hat mean(g_hat x_hat)), g_hat = g * w (all depths: ln_terms.csv)\n%s"
                        : "\n%s, L=%zu: RMSNorm backward by term, dL/dx = scale + radial = (1/rms) (g_hat - x_hat "
                          "mean(g_hat x_hat)), g_hat = g * w (all depths: ln_terms.csv)\n%s",
                  s.placements()[p].c_str(), L0, ln_table(s, p, L0).to_text().c_str());
    }
  ln_csv(s, first_seed).write_csv(std::filesystem::path(dir) / "ln_terms.csv");
  summary_csv(s, first_seed).write_csv(std::filesystem::path(dir) / "summary.csv");
  profile_csv(s).write_csv(std::filesystem::path(dir) / "profile.csv");
  draw_shares(s, emb_node, "the embedding output", dir);
  draw_shares(s, block0_node, "block 0's parameters", dir);
  draw_lengths(s, dir);
  std::printf("\nwrote %s/{summary,profile,ln_terms}.csv and the plots share_emb, share_block0, mean_length (.png, .svg)\n",
              dir.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("paths", "The gradient at initialization split by path length (the number of residual branches "
                "its paths go through), for the embedding and block 0, per placement and depth.", "out/paths");
  std::vector<std::size_t> depths = {2, 4, 6, 12, 24};
  ex.placements = {"post", "pre"};
  add_flag(ex.app, "--layers-list", depths, "depths L to measure (comma-separated; instead of --layers)", Whole{1});
  describe(ex.app, "--placements", "placements to compare, e.g. post,pre,peri (instead of --placement)");
  return ex.main(argc, argv, [&] {
    const ModelOptions& mo = ex.model;
    ex.select_depths_and_placements(depths);
    nn::ModelConfig largest = mo.config();
    largest.layers = depths.back();
    // The graded sweep holds up to 2L + 1 parts of a gradient where the ordinary one holds one: counted
    // as keeping every contribution (memory.hpp).
    ex.check_memory(largest, 0, true, ex.placements.size() * depths.size() * ex.seeds, 0.0);
    std::printf("paths: vocab %zu, d_model %zu, heads %zu, d_ff %zu, init %s; one Markov batch of %zu x %zu per "
                "seed; seeds %u..%zu; at initialization\n",
                mo.vocab, mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), mo.batch, mo.seq, mo.seed,
                mo.seed + ex.seeds - 1);
    std::vector<nn::Batch> batches;  // per seed: the batch --dump would write for it
    for (unsigned seed : ex.seed_list()) batches.push_back(MarkovBatches(mo.vocab, mo.batch, mo.seq, seed).batch(0));
    Grid grid;
    grid.axis("placement", ex.placements).axis("layers", labels(depths)).axis("seed", labels(ex.seed_list()));
    const auto runs = run_depths<PathRun>(ex, grid, [&](const Cell& c, Tick&) {
      ModelOptions o = ex.cell_model(c);
      if (c["seed"] == 0) ex.record_init_pass(c.index, grid.describe(c.index), o.config(), batches[c["seed"]]);
      return measure(o.config(), batches[c["seed"]]);
    });
    if (runs) report(Scan{{*runs, grid}, depths}, mo.seed, ex.out);
  });
}
