// sharpness: the curvature scopes (analysis/curvature.hpp), and `sharpness --dump DIR`, whose
// lambda_max.npy another tool can check: here the check reads the dump back (config, parameters, batch),
// builds the model from it, recomputes lambda_max(H) through the engine from another start vector, and
// compares.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/engine.hpp"
#include "analysis/eigen.hpp"
#include "analysis/curvature.hpp"
#include "experiments/lib/graph.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/directory_write.hpp"
#include "nn/io/json.hpp"
#include "nn/io/npy.hpp"
#include "nn/transformer_lm.hpp"

namespace test_experiments_sharpness {  // one namespace per test file: the files compile in groups

namespace fs = std::filesystem;
using namespace gs;
using namespace gs::analysis;

namespace {

nn::ModelConfig tiny_config() {
  nn::ModelConfig c;
  c.vocab = 6;
  c.context = 5;
  c.d_model = 8;
  c.heads = 2;
  c.layers = 2;
  nn::apply_placement(c, "post");
  return c;
}

std::string sharpness_binary() {
  std::stringstream list(GRADSCOPE_BINARIES);
  for (std::string path; std::getline(list, path, ',');)
    if (fs::path(path).filename() == "sharpness") return path;
  FAIL("no sharpness binary in GRADSCOPE_BINARIES");
  return "";
}

}  // namespace

TEST_CASE("curvature scopes: the model and each block; a block's lambda_max is at most the model's", "[sharpness]") {
  const nn::ModelConfig config = tiny_config();
  nn::TransformerLM model(config);
  const std::vector<analysis::CurvatureScope> scopes = analysis::curvature_scopes(model);
  REQUIRE(scopes.size() == 1 + config.layers);
  const auto named = model.named_parameters();
  REQUIRE(scopes[0].indices.size() == named.size());
  std::size_t in_blocks = 0;
  for (std::size_t b = 0; b < config.layers; ++b) {
    REQUIRE(scopes[1 + b].name == "block " + std::to_string(b));
    for (std::size_t i : scopes[1 + b].indices) REQUIRE(named[i].name.rfind("blocks." + std::to_string(b) + ".", 0) == 0);
    in_blocks += scopes[1 + b].indices.size();
  }
  std::size_t named_in_blocks = 0;
  for (const auto& p : named) named_in_blocks += p.name.rfind("blocks.", 0) == 0;
  REQUIRE(in_blocks == named_in_blocks);

  // A principal submatrix's largest eigenvalue is at most the matrix's (Cauchy interlacing).
  const nn::Batch batch{IndexArray{{1, 2, 3, 4, 5}, {0, 2, 4, 1, 3}}, IndexArray{{2, 3, 4, 5, 0}, {2, 4, 1, 3, 5}}};
  const LossFunction loss = analysis::batch_loss(model, batch);
  const std::vector<Parameter> all = analysis::parameter_handles(model);
  LanczosOptions o;
  o.tolerance = test::tol(1e-6, 1e-2);
  o.max_iterations = 300;
  const CurvatureResult whole = analysis::scope_lambda_max(loss, all, scopes[0], o);
  // float32: Lanczos on finite-difference Hessian products does not converge (docs/precision.md)
  if (!float32_build) REQUIRE(whole.converged);
  REQUIRE(whole.lambda_max > 0);
  for (std::size_t b = 1; b < scopes.size(); ++b) {
    const CurvatureResult block = analysis::scope_lambda_max(loss, all, scopes[b], o);
    INFO(scopes[b].name << ": " << block.lambda_max << " vs the model's " << whole.lambda_max);
    REQUIRE(block.lambda_max <= whole.lambda_max * (1 + 1e-6));
    REQUIRE(block.lambda_max > 0);
  }
  REQUIRE(analysis::adam_threshold(0.9) == Approx(38.0));
  REQUIRE_THROWS_WITH(analysis::scope_preconditioned_lambda_max(loss, all, {}, scopes[0], o),
                      Catch::Contains("0 preconditioner arrays for"));
}

TEST_CASE("sharpness --dump: lambda_max.npy is the top eigenvalue of H of the dumped model on the dumped batch",
          "[sharpness][dump]") {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_sharpness_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string command = "cd '" + dir.string() + "' && '" + sharpness_binary() +
                              "' --layers 2 --d-model 8 --heads 2 --seq 5 --batch 3 --vocab 6 --placement post "
                              "--placements post --seeds 1 --lrs 0.01 --warmups 0 --steps 2 --every 2 --eval-batches 1 "
                              "--tolerance 1e-5 --lanczos-iterations 300 --out o --dump d > out.txt 2> err.txt";
  const int raw = std::system(command.c_str());
  INFO(nn::read_file(dir / "out.txt") << nn::read_file(dir / "err.txt"));
  REQUIRE(WIFEXITED(raw));
  REQUIRE(WEXITSTATUS(raw) == 0);

  // Read the dump back, every file verified against the manifest.
  const nn::VerifiedDirectory files(dir / "d", "dump");
  REQUIRE(files.manifest().tag.program == "sharpness");
  REQUIRE_NOTHROW(files.refuse_unlisted_files());
  const std::string file = (dir / "d" / "config.json").string();
  const nlohmann::json doc = nn::parse_json(files.read("config.json", 1 << 20), file);
  const nn::ModelConfig config = nn::model_config_from_json(doc, file);
  REQUIRE(nn::placement_name(config) == "post");
  nn::TransformerLM model(config);
  for (const nn::NamedParameter& p : model.named_parameters()) {
    const std::string name = "params/" + p.name + ".npy";
    const Array value = nn::parse_npy_real(files.read(name, 1 << 24), name, p.parameter.shape());
    REQUIRE(value.shape() == p.parameter.value().shape());
    Parameter handle = p.parameter;
    handle.value() = value;
  }
  const nn::Batch batch{nn::parse_npy_i8(files.read("batch/inputs.npy", 1 << 20), "inputs", {3, 5}),
                        nn::parse_npy_i8(files.read("batch/targets.npy", 1 << 20), "targets", {3, 5})};
  const Array dumped = nn::parse_npy_real(files.read("lambda_max.npy", 1 << 10), "lambda_max.npy", {1});
  REQUIRE(dumped.size() == 1);
  const double loss = nn::parse_npy_real(files.read("loss.npy", 1 << 10), "loss.npy", {1})(0);

  // The dumped parameters and batch give the dumped loss (the dump is what was measured) ...
  {
    Tape tape;
    TapeScope scope(tape);
    REQUIRE(model.loss(batch.inputs, batch.targets).value()() == loss);
  }
  // ... and lambda_max(H) from another start vector agrees with lambda_max.npy. (1e-5: the finite
  // differences of hvp keep the residual from falling much below ~5e-6 here.)
  LanczosOptions o;
  o.tolerance = test::tol(1e-5, 1e-2);
  o.max_iterations = 300;
  o.seed = 7;
  const CurvatureResult again = hessian_lambda_max(analysis::batch_loss(model, batch),
                                                   analysis::parameter_handles(model), o);
  INFO("dumped " << dumped(0) << ", recomputed " << again.lambda_max << " in " << again.iterations
                  << " products, residual / lambda " << again.residual / again.lambda_max);
  if (!float32_build) REQUIRE(again.converged);  // (as above)
  REQUIRE(dumped(0) > 0);
  // Each value is within its residual (<= 1e-5 lambda) of an eigenvalue of H; both of the top one.
  if (!float32_build) REQUIRE(std::abs(again.lambda_max - dumped(0)) <= 2e-5 * std::abs(dumped(0)));
  fs::remove_all(dir);
}

}  // namespace test_experiments_sharpness
