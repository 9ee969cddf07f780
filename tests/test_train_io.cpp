// .npy files, checkpoints and dumps: exact round trips, and refusals that name the file and parameter.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "check.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/io/dump.hpp"
#include "nn/io/json.hpp"
#include "nn/io/npy.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;
using namespace gs::nn;
namespace fs = std::filesystem;

namespace {

// A fresh, empty directory under /tmp, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("gradscope-test-" + std::to_string(::getpid()) + "-" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

bool same_bits(const Array& a, const Array& b) {
  return shape_of(a) == shape_of(b) && std::equal(a.begin(), a.end(), b.begin(), [](double x, double y) {
           return std::memcmp(&x, &y, sizeof x) == 0;
         });
}

void overwrite(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

ModelConfig tiny_config() {
  return {.vocab = 7, .context = 5, .d_model = 8, .heads = 2, .layers = 2, .seed = 3};
}

}  // namespace

TEST_CASE("npy: float64 and int64 arrays round-trip bit for bit", "[train][npy]") {
  TempDir dir("npy");
  const Array a = Array{{1.0, -0.0, 1e-300}, {std::numeric_limits<double>::max(), -INFINITY, 0.1}};
  write_npy(dir.path / "a.npy", a);
  REQUIRE(same_bits(read_npy_f8(dir.path / "a.npy"), a));

  for (const Array& x : {Array(test::randn({4}, 1)), Array(test::randn({2, 3, 4}, 2)), Array(3.5),
                         Array(Array::from_shape({0, 3}))}) {
    write_npy(dir.path / "x.npy", x);
    REQUIRE(same_bits(read_npy_f8(dir.path / "x.npy"), x));
  }
  const IndexArray ids = {{0, -1, std::numeric_limits<std::int64_t>::max()}, {5, 6, std::numeric_limits<std::int64_t>::min()}};
  write_npy(dir.path / "ids.npy", ids);
  REQUIRE(xt::all(xt::equal(read_npy_i8(dir.path / "ids.npy"), ids)));
}

TEST_CASE("npy: the header is NumPy's format 1.0", "[train][npy]") {
  const std::string bytes = npy_bytes(Array{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  REQUIRE(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]);
  REQUIRE((10 + header_len) % 64 == 0);  // the data is 64-byte aligned
  const std::string header = bytes.substr(10, header_len);
  REQUIRE(header.rfind("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 0) == 0);
  REQUIRE(header.back() == '\n');
  REQUIRE(bytes.size() == 10 + header_len + 6 * 8);
  double first;
  std::memcpy(&first, bytes.data() + 10 + header_len, 8);
  REQUIRE(first == 1.0);
  REQUIRE(npy_bytes(IndexArray{4, 5}).find("'descr': '<i8'") != std::string::npos);
  REQUIRE(npy_bytes(IndexArray{4}).find("'shape': (1,)") != std::string::npos);
}

TEST_CASE("npy: missing, corrupt and mismatched files are refused naming the file", "[train][npy]") {
  TempDir dir("npy-bad");
  const fs::path f = dir.path / "w.npy";
  const std::string name = f.string();
  REQUIRE_THROWS_WITH(read_npy_f8(dir.path / "none.npy"), Catch::Contains("none.npy"));

  const std::string good = npy_bytes(Array{{1.0, 2.0}, {3.0, 4.0}});
  overwrite(f, "not an npy file at all");
  REQUIRE_THROWS_WITH(read_npy_f8(f), Catch::Contains(name) && Catch::Contains("bad magic"));
  overwrite(f, good.substr(0, good.size() - 3));  // truncated data
  REQUIRE_THROWS_WITH(read_npy_f8(f), Catch::Contains(name) && Catch::Contains("truncated"));
  overwrite(f, good + "xx");  // trailing bytes
  REQUIRE_THROWS_WITH(read_npy_f8(f), Catch::Contains(name));
  overwrite(f, good.substr(0, 40));  // cut inside the header
  REQUIRE_THROWS_WITH(read_npy_f8(f), Catch::Contains(name));

  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  overwrite(f, fortran);
  REQUIRE_THROWS_WITH(read_npy_f8(f), Catch::Contains(name) && Catch::Contains("fortran_order"));

  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f8"), 3, ">f8");
  overwrite(f, big_endian);
  REQUIRE_THROWS_WITH(read_npy_f8(f), Catch::Contains(name) && Catch::Contains("dtype"));

  write_npy(f, IndexArray{1, 2});
  REQUIRE_THROWS_WITH(read_npy_f8(f), Catch::Contains(name) && Catch::Contains("'<i8'"));
  write_npy(f, Array{1.0});
  REQUIRE_THROWS_WITH(read_npy_i8(f), Catch::Contains(name) && Catch::Contains("'<f8'"));
}

TEST_CASE("json: the config parser reads what the writers write and names the file on errors", "[train][json]") {
  const std::string text = json_object({{"a", "1"}, {"b", json_quote("x\"y\n")}, {"c", "[1, 2.5, true, null]"},
                                        {"d", json_object({{"e", "false"}}, 2)}});
  const Json j = parse_json(text, "f.json");
  REQUIRE(j.at("a", "f.json").as_size("a", "f.json") == 1);
  REQUIRE(j.at("b", "f.json").string == "x\"y\n");
  REQUIRE(j.at("c", "f.json").array.size() == 4);
  REQUIRE(j.at("c", "f.json").array[1].number == 2.5);
  REQUIRE(j.at("d", "f.json").at("e", "f.json").type == Json::Type::boolean);
  REQUIRE_THROWS_WITH(parse_json("{\"a\": }", "f.json"), Catch::Contains("f.json"));
  REQUIRE_THROWS_WITH(parse_json("{\"a\": 1} x", "f.json"), Catch::Contains("trailing"));
  REQUIRE_THROWS_WITH(j.at("zz", "f.json"), Catch::Contains("f.json") && Catch::Contains("zz"));
}

TEST_CASE("checkpoint: save then load restores every parameter and the optimizer state exactly",
          "[train][checkpoint]") {
  TempDir dir("ckpt");
  const ModelConfig config = tiny_config();
  TransformerLM model(config);
  Adam adam(model.named_parameters(), adamw_options(0.01));
  // One real training step, so that parameters and moments hold arbitrary doubles.
  const IndexArray ids = {{1, 2, 3, 4, 5}, {6, 0, 1, 2, 3}}, targets = {{2, 3, 4, 5, 6}, {0, 1, 2, 3, 4}};
  Tape::current().reset();
  model.loss(ids, targets).backward();
  adam.step(1e-2);
  Tape::current().reset();
  save_checkpoint(dir.path / "c", model, config, 17, &adam);
  REQUIRE(fs::exists(dir.path / "c" / "blocks.1.attn.q.weight.npy"));
  REQUIRE(fs::exists(dir.path / "c" / "optimizer" / "v" / "head.bias.npy"));

  ModelConfig other_seed = config;
  other_seed.seed = 99;  // different initial weights, same architecture
  TransformerLM fresh(other_seed);
  Adam fresh_adam(fresh.named_parameters(), adamw_options(0.01));
  const CheckpointInfo info = load_checkpoint(dir.path / "c", fresh, other_seed, &fresh_adam);
  REQUIRE(info.step == 17);
  REQUIRE(info.optimizer == "adamw");
  REQUIRE(info.config.seed == 3);
  REQUIRE(fresh_adam.steps() == 1);
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

  // Saving again over the same directory replaces it.
  save_checkpoint(dir.path / "c", model, config, 18);
  REQUIRE(read_checkpoint_info(dir.path / "c").step == 18);
  REQUIRE_FALSE(fs::exists(dir.path / "c" / "optimizer"));
}

TEST_CASE("checkpoint: a missing parameter, a wrong shape, a corrupt or extra file is refused", "[train][checkpoint]") {
  TempDir dir("ckpt-bad");
  const ModelConfig config = tiny_config();
  TransformerLM model(config);
  const fs::path c = dir.path / "c";
  TransformerLM target(config);
  const Array before = target.head.weight.value();
  auto refresh = [&] { save_checkpoint(c, model, config, 5); };

  SECTION("missing parameter") {
    refresh();
    const fs::path f = c / "blocks.0.mlp.fc1.weight.npy";
    fs::remove(f);
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config),
                        Catch::Contains("'blocks.0.mlp.fc1.weight'") && Catch::Contains(f.string()));
  }
  SECTION("wrong shape") {
    refresh();
    const fs::path f = c / "blocks.1.attn.k.bias.npy";
    write_npy(f, Array{1.0, 2.0, 3.0});
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config), Catch::Contains("'blocks.1.attn.k.bias'") &&
                                                                Catch::Contains(f.string()) && Catch::Contains("(3,)") &&
                                                                Catch::Contains("(8,)"));
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
    write_npy(c / "blocks.9.attn.q.weight.npy", Array{1.0});
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config), Catch::Contains("blocks.9.attn.q.weight"));
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
    save_checkpoint(c, model, config, 5, &sgd);
    REQUIRE_THROWS_WITH(load_checkpoint(c, target, config, &adam), Catch::Contains("'sgd'"));
  }
  SECTION("not a checkpoint") {
    REQUIRE_THROWS_WITH(load_checkpoint(dir.path / "nothing", target, config), Catch::Contains("config.json"));
    fs::create_directories(dir.path / "other");
    overwrite(dir.path / "other" / "notes.txt", "mine");
    REQUIRE_THROWS_WITH(save_checkpoint(dir.path / "other", model, config, 0), Catch::Contains("not a checkpoint"));
    REQUIRE(fs::exists(dir.path / "other" / "notes.txt"));
  }
  // Every refusal leaves the model as it was.
  REQUIRE(same_bits(target.head.weight.value(), before));
}

TEST_CASE("dump: config, parameters, gradients, batch and loss of one batch", "[train][dump]") {
  TempDir dir("dump");
  const ModelConfig config = tiny_config();
  TransformerLM model(config);
  const Batch batch{IndexArray{{1, 2, 3}, {4, 5, 6}}, IndexArray{{2, 3, 4}, {5, 6, 0}}};
  const double loss = write_dump(dir.path, config, model, batch,
                                 [&](const IndexArray& x, const IndexArray& y) { return model.loss(x, y); });

  const Json cfg = parse_json(read_file(dir.path / "config.json"), "config.json");
  for (const char* key : {"vocab", "context", "d_model", "heads", "layers", "d_ff", "placement"})
    REQUIRE(cfg.has(key));
  REQUIRE(cfg.at("d_ff", "").number == 32);
  REQUIRE(cfg.at("placement", "").string == "pre");
  REQUIRE(xt::all(xt::equal(read_npy_i8(dir.path / "batch" / "inputs.npy"), batch.inputs)));
  REQUIRE(xt::all(xt::equal(read_npy_i8(dir.path / "batch" / "targets.npy"), batch.targets)));
  const Array l = read_npy_f8(dir.path / "loss.npy");
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
    REQUIRE(same_bits(read_npy_f8(dir.path / "params" / (p.name + ".npy")), p.parameter.value()));
    REQUIRE(same_bits(read_npy_f8(dir.path / "grads" / (p.name + ".npy")), p.parameter.grad()));
  }
  REQUIRE(fs::exists(dir.path / "params" / "ln_f.weight.npy"));
  Tape::current().reset();
}
