// .npy files, checkpoints and dumps: exact round trips, and refusals that name the file and parameter.
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "check.hpp"
#include "io_helpers.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/io/directory_write.hpp"
#include "nn/io/json.hpp"
#include "nn/io/npy.hpp"
#include "nn/transformer_lm.hpp"

namespace test_io_checkpoint {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;
using gs::test::overwrite;
using gs::test::same_bits;
using gs::test::TempDir;
using gs::test::saved_config;
namespace fs = std::filesystem;

TEST_CASE("npy: float64 and int64 arrays round-trip bit for bit", "[train][npy]") {
  TempDir dir("npy");
  const Array a = Array{{1.0, -0.0, std::numeric_limits<Real>::denorm_min()}, {std::numeric_limits<Real>::max(), -INFINITY, 0.1}};
  write_file_atomically(dir.path / "a.npy", npy_bytes(a));
  REQUIRE(same_bits(read_npy_real(dir.path / "a.npy", {2, 3}), a));

  for (const Array& x : {Array(test::randn({4}, 1)), Array(test::randn({2, 3, 4}, 2)), Array(3.5),
                         Array(Array::from_shape({0, 3}))}) {
    write_file_atomically(dir.path / "x.npy", npy_bytes(x));
    REQUIRE(same_bits(read_npy_real(dir.path / "x.npy", shape_of(x)), x));
  }
  const IndexArray ids = {{0, -1, std::numeric_limits<std::int64_t>::max()}, {5, 6, std::numeric_limits<std::int64_t>::min()}};
  write_file_atomically(dir.path / "ids.npy", npy_bytes(ids));
  REQUIRE(xt::all(xt::equal(read_npy_i8(dir.path / "ids.npy", {2, 3}), ids)));
}

TEST_CASE("npy: the header is NumPy's format 1.0", "[train][npy]") {
  const std::string bytes = npy_bytes(Array{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  REQUIRE(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]);
  REQUIRE((10 + header_len) % 64 == 0);  // the data is 64-byte aligned
  const std::string header = bytes.substr(10, header_len);
  const std::string descr = float32_build ? "'<f4'" : "'<f8'";  // the build's gs::Real
  REQUIRE(header.rfind("{'descr': " + descr + ", 'fortran_order': False, 'shape': (2, 3), }", 0) == 0);
  REQUIRE(header.back() == '\n');
  REQUIRE(bytes.size() == 10 + header_len + 6 * sizeof(Real));
  Real first;
  std::memcpy(&first, bytes.data() + 10 + header_len, sizeof(Real));
  REQUIRE(first == 1.0);
  REQUIRE(npy_bytes(IndexArray{4, 5}).find("'descr': '<i8'") != std::string::npos);
  REQUIRE(npy_bytes(IndexArray{4}).find("'shape': (1,)") != std::string::npos);
}

TEST_CASE("npy: a file that is not the one xtensor writes for the expected shape is refused naming the file",
          "[train][npy]") {
  TempDir dir("npy-bad");
  const fs::path f = dir.path / "w.npy";
  const std::string name = f.string();
  const Shape shape{2, 2};
  REQUIRE_THROWS_WITH(read_npy_real(dir.path / "none.npy", shape), Catch::Contains("none.npy"));

  const std::string good = npy_bytes(Array{{1.0, 2.0}, {3.0, 4.0}});
  auto refused = [&](const std::string& bytes, const std::string& what) {
    overwrite(f, bytes);
    REQUIRE_THROWS_WITH(read_npy_real(f, shape), Catch::StartsWith(name + ": ") && Catch::Contains(what));
  };
  const std::string real = float32_build ? "float32" : "float64", f8 = float32_build ? "<f4" : "<f8";
  refused("not an npy", "10 bytes, fewer than the data of a " + real + " .npy of shape (2, 2) (truncated or corrupt)");
  refused(good.substr(0, good.size() - 3), std::to_string(good.size() - 3) + " bytes, not the " + std::to_string(good.size()) +
                                               " of a " + real + " .npy of shape (2, 2) (truncated or corrupt)");
  refused(good + "xx", "truncated or corrupt");
  refused(good.substr(0, 40), "truncated or corrupt");
  // The size is right, the header is not: another shape, dtype, order, version or magic.
  std::string other = good;
  other.replace(other.find("(2, 2)"), 6, "(4,)  ");
  refused(other, "its header is not that of a " + real + " .npy of shape (2, 2)");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"False", "True "}, {f8, ">" + f8.substr(1)}, {f8, "<i" + f8.substr(2)},
           {std::string("\x01\x00", 2), std::string("\x04\x00", 2)}, {"NUMPY", "NUMPZ"}}) {
    std::string bytes = good;
    bytes.replace(bytes.find(from), from.size(), to);
    refused(bytes, "its header is not that of a " + real + " .npy of shape (2, 2)");
  }
  write_file_atomically(f, npy_bytes(IndexArray{{1, 2}, {3, 4}}));
  // (float64: the same size, another header; float32: another size)
  REQUIRE_THROWS_WITH(read_npy_real(f, shape), Catch::Contains("of a " + real + " .npy of shape (2, 2)"));
  REQUIRE(xt::all(xt::equal(read_npy_i8(f, shape), IndexArray{{1, 2}, {3, 4}})));
  REQUIRE_THROWS_WITH(read_npy_i8(f, {4}), Catch::Contains("its header is not that of a int64 .npy of shape (4,)"));
  // An expected shape too large to exist is refused before anything is allocated.
  REQUIRE_THROWS_WITH(read_npy_real(f, {std::size_t{1} << 40, std::size_t{1} << 40}), Catch::Contains("is too large"));
  REQUIRE_THROWS_WITH(read_npy_real(f, {std::size_t{1} << 40}), Catch::Contains("fewer than the data"));
}

TEST_CASE("checkpoint: save then load restores every parameter and the optimizer state exactly",
          "[train][checkpoint]") {
  TempDir dir("ckpt");
  const ModelConfig config = saved_config();
  TransformerLM model(config);
  Adam adam(model.named_parameters(), adamw_options(0.01));
  // One real training step, so that parameters and moments hold arbitrary doubles.
  const IndexArray ids = {{1, 2, 3, 4, 5}, {6, 0, 1, 2, 3}}, targets = {{2, 3, 4, 5, 6}, {0, 1, 2, 3, 4}};
  Tape::current().reset();
  model.loss(ids, targets).backward();
  adam.step(1e-2);
  Tape::current().reset();
  const nlohmann::json train = {{"lr", 0.01}, {"schedule", "cosine"}, {"batch", 2}, {"data", {{"file", "x.txt"}}}};
  save_checkpoint(dir.path / "c", "test", model, config, 17, &adam, &train);
  REQUIRE(fs::exists(dir.path / "c" / "blocks.1.attn.q.weight.npy"));
  REQUIRE(fs::exists(dir.path / "c" / "optimizer" / "v" / "head.bias.npy"));
  REQUIRE(fs::exists(dir.path / "c" / manifest_name));

  ModelConfig other_seed = config;
  other_seed.seed = 99;  // different initial weights, same architecture
  TransformerLM fresh(other_seed);
  Adam fresh_adam(fresh.named_parameters(), adamw_options(0.01));
  const CheckpointInfo info = load_checkpoint(dir.path / "c", fresh, other_seed, &fresh_adam);
  REQUIRE(info.step == 17);
  REQUIRE(info.program == "test");
  REQUIRE(info.optimizer == "adamw");
  REQUIRE(info.optimizer_steps == 1);
  REQUIRE(info.optimizer_slots == std::vector<std::string>{"m", "v"});
  REQUIRE(info.optimizer_hyperparameters ==
          std::vector<std::pair<std::string, double>>{{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.01}});
  REQUIRE(info.config.seed == 3);
  REQUIRE(fresh_adam.steps() == 1);
  // The "train" record reads back as it was given.
  REQUIRE(info.train() == train);
  REQUIRE(info.train().at("lr").get<double>() == 0.01);
  REQUIRE(info.train().at("data").at("file") == "x.txt");
  const auto a = model.named_parameters(), b = fresh.named_parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].name);
    REQUIRE(same_bits(a[i].parameter.value(), b[i].parameter.value()));
    REQUIRE(same_bits(adam.slot(0, i), fresh_adam.slot(0, i)));
    REQUIRE(same_bits(adam.slot(1, i), fresh_adam.slot(1, i)));
  }
  // The loaded model computes the same loss, bit for bit.
  Tape::current().reset();
  const double l1 = model.loss(ids, targets).value()();
  const double l2 = fresh.loss(ids, targets).value()();
  REQUIRE(l1 == l2);
  Tape::current().reset();

  // Saving again over the same directory replaces it, and leaves nothing beside it.
  save_checkpoint(dir.path / "c", "test", model, config, 18);
  REQUIRE(read_checkpoint_info(dir.path / "c").step == 18);
  REQUIRE(read_checkpoint_info(dir.path / "c").train().size() == 0);
  REQUIRE_FALSE(fs::exists(dir.path / "c" / "optimizer"));
  REQUIRE(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
  // Another program's save over it is refused, and so is a train record that would not read back.
  REQUIRE_THROWS_WITH(save_checkpoint(dir.path / "c", "other", model, config, 19),
                      Catch::Contains("holds gradscope test's checkpoint, not gradscope other's checkpoint"));
  const nlohmann::json nan_record = {{"lr", std::nan("")}};
  REQUIRE_THROWS_WITH(save_checkpoint(dir.path / "c", "test", model, config, 19, nullptr, &nan_record),
                      Catch::Contains("not finite"));
  REQUIRE(read_checkpoint_info(dir.path / "c").step == 18);
}

TEST_CASE("checkpoint: config.json is read once and load uses what read_checkpoint_info read", "[train][checkpoint]") {
  TempDir dir("ckpt-once");
  const ModelConfig config = saved_config();
  TransformerLM model(config);
  save_checkpoint(dir.path / "c", "test", model, config, 4);
  const CheckpointInfo info = read_checkpoint_info(dir.path / "c");
  // config.json changed after it was read: the load goes by what was read (and verified) then.
  overwrite(dir.path / "c" / "config.json", "not JSON");
  TransformerLM other(config);
  REQUIRE_NOTHROW(load_checkpoint(info, other, config));
  REQUIRE(same_bits(other.head.weight.value(), model.head.weight.value()));
  REQUIRE_THROWS_WITH(read_checkpoint_info(dir.path / "c"), Catch::Contains("config.json: its SHA-256 is"));
}

TEST_CASE("checkpoint: a missing parameter, a wrong shape, a corrupt or extra file is refused", "[train][checkpoint]") {
  TempDir dir("ckpt-bad");
  const ModelConfig config = saved_config();
  TransformerLM model(config);
  const fs::path c = dir.path / "c";
  TransformerLM target(config);
  const Array before = target.head.weight.value();
  auto refresh = [&] { save_checkpoint(c, "test", model, config, 5); };

  SECTION("missing parameter") {
    refresh();
    const fs::path f = c / "blocks.0.mlp.fc1.weight.npy";
    fs::remove(f);
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config),
                        Catch::Contains("'blocks.0.mlp.fc1.weight'") && Catch::Contains(f.string()));
  }
  SECTION("a file changed after it was written") {
    refresh();
    const fs::path f = c / "blocks.1.attn.k.bias.npy";
    write_file_atomically(f, npy_bytes(Array{1.0, 2.0, 3.0}));
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config), Catch::Contains("'blocks.1.attn.k.bias'") &&
                                                                Catch::Contains(f.string()) &&
                                                                Catch::Contains("SHA-256"));
  }
  SECTION("wrong shape, with a manifest that agrees") {
    refresh();
    const fs::path f = c / "blocks.1.attn.k.bias.npy";
    write_file_atomically(f, npy_bytes(Array{1.0, 2.0, 3.0}));
    test::reseal(c);
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config), Catch::Contains("'blocks.1.attn.k.bias'") &&
                                                                Catch::Contains(f.string()) &&
                                                                Catch::Contains(float32_build ? "not the 160 of a float32 .npy of shape (8,)"
                                                                                              : "not the 192 of a float64 .npy of shape (8,)"));
  }
  SECTION("corrupt file") {
    refresh();
    const fs::path f = c / "tok_emb.weight.npy";
    const std::string bytes = read_file(f);
    overwrite(f, bytes.substr(0, bytes.size() - 8));
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config),
                        Catch::Contains("'tok_emb.weight'") && Catch::Contains(f.string()));
  }
  SECTION("a parameter the model does not have") {
    refresh();
    write_file_atomically(c / "blocks.9.attn.q.weight.npy", npy_bytes(Array{1.0}));
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config),
                        Catch::Contains("blocks.9.attn.q.weight") && Catch::Contains("not listed"));
    test::reseal(c);  // listed in the manifest, but config.json has no such parameter
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config),
                        Catch::Contains("blocks.9.attn.q.weight") && Catch::Contains("implies no such file"));
  }
  SECTION("the other precision's checkpoint") {
    refresh();
    // As if the other build had written it: its config.json names the other precision.
    const fs::path f = c / "config.json";
    std::string text = nn::read_file(f);
    const std::string ours = std::string("\"precision\": \"") + precision_name + "\"";
    REQUIRE(text.find(ours) != std::string::npos);
    const std::string other = float32_build ? "f64" : "f32";
    text.replace(text.find(ours), ours.size(), "\"precision\": \"" + other + "\"");
    write_file_atomically(f, text);
    test::reseal(c);
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config),
                        Catch::Contains(f.string() + ": the checkpoint's arrays are " + other + ", this build's are " +
                                        precision_name + " (read it with a build configured -DGRADSCOPE_PRECISION=" + other + ")"));
    REQUIRE(same_bits(target.head.weight.value(), before));  // nothing loaded
  }
  SECTION("another architecture") {
    refresh();
    ModelConfig other = config;
    other.heads = 4;
    TransformerLM wrong(other);
    REQUIRE_THROWS_WITH(load_checkpoint(c, wrong, other), Catch::Contains("heads is 2") && Catch::Contains("config.json"));
  }
  SECTION("no optimizer state, or another optimizer's") {
    refresh();
    Adam adam(target.named_parameters());
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config, &adam), Catch::Contains("no optimizer state"));
    Sgd sgd(model.named_parameters());
    save_checkpoint(c, "test", model, config, 5, &sgd);
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config, &adam), Catch::Contains("'sgd'"));
  }
  SECTION("other hyperparameters") {
    Adam adam(model.named_parameters(), adamw_options(0.01));
    save_checkpoint(c, "test", model, config, 5, &adam);
    Adam other(target.named_parameters(), adamw_options(0.1));
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config, &other),
                        Catch::Contains("weight_decay 0.01; this optimizer has") && Catch::Contains("weight_decay 0.1"));
    REQUIRE(other.steps() == 0);
  }
  SECTION("not a checkpoint") {
    REQUIRE_THROWS_WITH(load_checkpoint(dir.path / "nothing", target, config), Catch::Contains("is not a directory"));
    fs::create_directories(dir.path / "other");
    overwrite(dir.path / "other" / "notes.txt", "mine");
    REQUIRE_THROWS_WITH(load_checkpoint(dir.path / "other", target, config),
                        Catch::Contains("is not a gradscope checkpoint") && Catch::Contains(manifest_name));
    REQUIRE_THROWS_WITH(save_checkpoint(dir.path / "other", "test", model, config, 0),
                        Catch::Contains("holds no gradscope-output.json") && Catch::Contains("not replacing it"));
    REQUIRE(fs::exists(dir.path / "other" / "notes.txt"));
  }
  SECTION("a file the user added to a checkpoint") {
    refresh();
    overwrite(c / "notes.txt", "mine");
    REQUIRE_THROWS_WITH(save_checkpoint(c, "test", model, config, 6),
                        Catch::Contains("holds notes.txt, which gradscope test's checkpoint did not write"));
    REQUIRE(test::read_file_or_empty(c / "notes.txt") == "mine");
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config), Catch::Contains("notes.txt is not listed"));
  }
  SECTION("a dump is not a checkpoint") {
    const Batch batch{IndexArray{{1, 2}}, IndexArray{{2, 3}}};
    write_dump(c, "test", config, model, batch, [&](const IndexArray& x, const IndexArray& y) { return model.loss(x, y); });
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config), Catch::Contains("is a dump of gradscope test, not a checkpoint"));
    REQUIRE_THROWS_WITH(save_checkpoint(c, "test", model, config, 6), Catch::Contains("holds gradscope test's dump"));
  }
  // Every refusal leaves the model as it was.
  REQUIRE(same_bits(target.head.weight.value(), before));
}

TEST_CASE("dump: config, parameters, gradients, batch and loss of one batch", "[train][dump]") {
  TempDir dir("dump");
  const ModelConfig config = saved_config();
  TransformerLM model(config);
  const Batch batch{IndexArray{{1, 2, 3}, {4, 5, 6}}, IndexArray{{2, 3, 4}, {5, 6, 0}}};
  const double loss = write_dump(dir.path, "test", config, model, batch,
                                 [&](const IndexArray& x, const IndexArray& y) { return model.loss(x, y); });

  const nlohmann::json cfg = read_json_file(dir.path / "config.json", 1 << 20);
  for (const char* key : {"vocab", "context", "d_model", "heads", "layers", "d_ff", "placement", "init", "seed"})
    REQUIRE(cfg.contains(key));
  REQUIRE(cfg["format"] == "gradscope dump");
  REQUIRE(cfg["d_ff"] == 32);
  REQUIRE(cfg["placement"] == "pre");
  // The manifest lists every file with its SHA-256, and every listed file verifies.
  const VerifiedDirectory files(dir.path, "dump");
  REQUIRE(files.manifest().tag.program == "test");
  REQUIRE(files.manifest().files.size() == 4 + 2 * model.named_parameters().size());
  for (const auto& [name, sha] : files.manifest().files) REQUIRE_NOTHROW(files.read(name, 1 << 20));
  REQUIRE_NOTHROW(files.refuse_unlisted_files());
  REQUIRE(xt::all(xt::equal(read_npy_i8(dir.path / "batch" / "inputs.npy", {2, 3}), batch.inputs)));
  REQUIRE(xt::all(xt::equal(read_npy_i8(dir.path / "batch" / "targets.npy", {2, 3}), batch.targets)));
  const Array l = read_npy_real(dir.path / "loss.npy", {1});
  REQUIRE(shape_of(l) == Shape{1});
  REQUIRE(l(0) == loss);

  // The gradients are those of a fresh backward on the same batch.
  Tape::current().reset();
  model.zero_grad();
  const Var again = model.loss(batch.inputs, batch.targets);
  REQUIRE(again.value()() == loss);
  again.backward();
  for (const NamedParameter& p : model.named_parameters()) {
    INFO(p.name);
    REQUIRE(same_bits(read_npy_real(dir.path / "params" / (p.name + ".npy"), p.parameter.shape()), p.parameter.value()));
    REQUIRE(same_bits(read_npy_real(dir.path / "grads" / (p.name + ".npy"), p.parameter.shape()), p.parameter.grad()));
  }
  REQUIRE(fs::exists(dir.path / "params" / "ln_f.weight.npy"));
  Tape::current().reset();
}

}  // namespace test_io_checkpoint
