// Every binary of experiments/ and bench/ (their paths come from CMake, GRADSCOPE_BINARIES): --help
// states each flag's default, a bad flag or a value outside the flag's range is one line on stderr
// naming it with exit 2, a run that cannot fit in memory is refused at once, and a grid run in two
// shards merges into exactly the tables and CSV files of the unsharded run.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "nn/io/atomic_file.hpp"
#include "run_binary.hpp"

namespace test_binaries {  // one namespace per test file: the files compile in groups

namespace fs = std::filesystem;

namespace {

std::vector<std::string> binaries() {
  std::vector<std::string> out;
  std::stringstream list(GRADSCOPE_BINARIES);
  for (std::string path; std::getline(list, path, ',');) out.push_back(path);
  return out;
}

struct Result {
  int status;  // the exit code, -1 if killed by a signal
  std::string out, err;
};

// Runs binary with args (in directory `cwd` if given).
Result run(const std::string& binary, const std::string& args, const fs::path& cwd = {}) {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_binaries_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string command = (cwd.empty() ? "" : "cd '" + cwd.string() + "' && ") + "'" + binary + "' " + args +
                              " > '" + (dir / "out").string() + "' 2> '" + (dir / "err").string() + "'";
  const int raw = std::system(command.c_str());
  Result r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, gs::nn::read_file(dir / "out"), gs::nn::read_file(dir / "err")};
  fs::remove_all(dir);
  return r;
}

// The options of a CLI11 help text: the first column of each line "  --name TYPE=default   description".
std::vector<std::string> option_columns(const std::string& help) {
  std::vector<std::string> out;
  std::stringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  -", 0) != 0) continue;
    const std::size_t end = line.find("  ", 2);
    out.push_back(line.substr(2, end == std::string::npos ? std::string::npos : end - 2));
  }
  return out;
}

// The flags of a help text that take a number (UINT, INT, FLOAT), a list of numbers or not.
struct NumericFlag {
  std::string flag;  // "--lr"
  bool real, list;
};
std::vector<NumericFlag> numeric_flags(const std::string& help) {
  std::vector<NumericFlag> out;
  for (const std::string& column : option_columns(help)) {
    const bool real = column.find(" FLOAT") != std::string::npos;
    if (!real && column.find(" UINT") == std::string::npos && column.find(" INT") == std::string::npos) continue;
    const std::string names = column.substr(0, column.find(' '));  // "--lr", or "-l,--lr"
    out.push_back({names.substr(names.rfind(',') + 1), real,
                   column.find(" ...") != std::string::npos || column.find("=[") != std::string::npos});
  }
  return out;
}

std::size_t lines_of(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("every binary: --help shows every flag's default; a bad flag or value is one line naming it",
          "[binaries]") {
  const std::vector<std::string> all = binaries();
  REQUIRE(all.size() >= 9);  // 7 experiments, 2 benchmarks
  for (const std::string& binary : all) {
    const std::string name = fs::path(binary).filename().string();
    INFO(binary);

    const Result help = run(binary, "--help");
    REQUIRE(help.status == 0);
    const std::vector<std::string> options = option_columns(help.out);
    REQUIRE(options.size() >= 2);  // --help and at least one flag
    for (const std::string& column : options) {
      INFO(column);
      const bool takes_value = column.find(' ') != std::string::npos;  // "--layers UINT:POSITIVE=8"
      if (takes_value) REQUIRE(column.find('=') != std::string::npos);  // a default is shown
    }
    const std::vector<NumericFlag> numbers = numeric_flags(help.out);
    const std::string numeric = numbers.empty() ? "" : numbers.front().flag;  // the first flag that takes a number

    const Result bad_flag = run(binary, "--no-such-flag");
    REQUIRE(bad_flag.status == 2);
    REQUIRE(bad_flag.out.empty());
    REQUIRE(lines_of(bad_flag.err) == 1);
    REQUIRE(bad_flag.err.rfind(name + ": error: ", 0) == 0);
    REQUIRE(bad_flag.err.find("--no-such-flag") != std::string::npos);

    REQUIRE(!numeric.empty());
    INFO("a bad value for " << numeric);
    const Result bad_value = run(binary, numeric + " abc");
    REQUIRE(bad_value.status == 2);
    REQUIRE(bad_value.out.empty());
    REQUIRE(lines_of(bad_value.err) == 1);
    REQUIRE(bad_value.err.find(numeric) != std::string::npos);
    REQUIRE(bad_value.err.find("abc") != std::string::npos);
  }
}

TEST_CASE("tape_demo --graph and gradflow --graph write the graph, and exit 0", "[binaries][dot]") {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_graph_flag_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const std::string& binary : binaries()) {
    const std::string name = fs::path(binary).filename().string();
    if (name != "tape_demo" && name != "gradflow") continue;
    INFO(binary);
    const fs::path file = dir / (name + ".dot");
    const std::string model = name == "gradflow" ? " --layers 1 --d-model 8 --heads 2 --seq 4 --batch 2" : "";
    const Result r = run(binary, "--graph '" + file.string() + "'" + model);
    REQUIRE(r.status == 0);
    const std::string dot = gs::nn::read_file(file);
    REQUIRE(dot.rfind("digraph tape {", 0) == 0);
    REQUIRE(dot.find("label=") != std::string::npos);
    if (name == "gradflow") REQUIRE(dot.find("label=\"branch ") != std::string::npos);
  }
  fs::remove_all(dir);
}

namespace {

std::string path_of(const std::string& name) {
  for (const std::string& binary : binaries())
    if (fs::path(binary).filename() == name) return binary;
  FAIL("no binary " << name);
  return "";
}

// A refusal: exit 2 (a flag) or 1 (a run), one line on stderr that starts with the program's name.
void require_refused(const Result& r, int status, const std::string& name, const std::vector<std::string>& mentions) {
  REQUIRE(r.status == status);
  REQUIRE(lines_of(r.err) == 1);
  REQUIRE(r.err.rfind(name + ": error: ", 0) == 0);
  for (const std::string& m : mentions) REQUIRE(r.err.find(m) != std::string::npos);
}

}  // namespace

TEST_CASE("every numeric flag of every binary refuses what is outside its range, naming the flag and the range",
          "[binaries][ranges]") {
  for (const std::string& binary : binaries()) {
    const std::string name = fs::path(binary).filename().string();
    for (const auto& [flag, real, list] : numeric_flags(run(binary, "--help").out)) {
      // Every range starts at 0 or above, so -1 is outside all of them (CLI11 alone wraps it to 2^64 - 1).
      std::vector<std::string> bad = {"-1", real ? "nan" : "99999999999999999999", real ? "1e999" : "+5", "0x10", "3junk"};
      if (list) bad.push_back(real ? "0.01,nan" : "4,-2");
      for (const std::string& value : bad) {
        INFO(name << " " << flag << " " << value);
        const Result r = run(binary, flag + " " + value);
        require_refused(r, 2, name, {flag, value == "99999999999999999999" ? "is too large" : "is not a "});
        REQUIRE(r.out.empty());
      }
    }
  }
}

TEST_CASE("the number of jobs is capped, and flags that do not go together are refused before any work", "[binaries][ranges]") {
  require_refused(run(path_of("warmup"), "--jobs 100000"), 2, "warmup", {"--jobs", "whole number in [1, "});
  require_refused(run(path_of("gradflow"), "--heads 3"), 2, "gradflow", {"--heads 3 does not divide --d-model 64"});
  require_refused(run(path_of("stream"), "--layers 3 --layers-list 2"), 2, "stream", {"--layers-list"});
  require_refused(run(path_of("paths"), "--layers 3 --layers-list 2"), 2, "paths", {"--layers-list"});
  require_refused(run(path_of("warmup"), "--steps 5 --window 10"), 2, "warmup", {"--window"});
  require_refused(run(path_of("sharpness"), "--steps 5 --every 10"), 2, "sharpness", {"--every 10 is more than --steps 5"});
  require_refused(run(path_of("gradflow"), "--shard 1/2 --merge /tmp"), 2, "gradflow", {"--shard", "--merge"});
  require_refused(run(path_of("train"), "--text /dev/zero"), 2, "train", {"--text", "regular file"});
  const fs::path empty = fs::temp_directory_path() / ("gradscope_test_not_a_checkpoint_" + std::to_string(::getpid()));
  fs::create_directories(empty);
  require_refused(run(path_of("train"), "--resume '" + empty.string() + "'"), 1, "train", {"is not a gradscope checkpoint"});  // a bad run
  fs::remove_all(empty);
}

TEST_CASE("a run that cannot fit in memory is refused before it allocates, with the estimate and its flags",
          "[binaries][memory]") {
  for (const auto& [name, args, flag] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"train", "--layers 100000", "--layers 100000"},
           {"train", "--batch 10000000", "--batch 10000000"},
           {"warmup", "--batch 10000000", "--batch 10000000"},
           {"gradflow", "--depths 2,100000", "--layers 100000"},
           {"paths", "--layers-list 2,100000", "--layers 100000"},
           {"stream", "--d-model 100000 --heads 1", "--d-model 100000"}}) {
    INFO(name << " " << args);
    const auto start = std::chrono::steady_clock::now();
    const Result r = run(path_of(name), args);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    require_refused(r, 1, name, {"needs about", " available (", flag});
    REQUIRE(seconds < 5.0);  // not a timing test: a refusal that allocated first would take minutes or be killed
  }
}

TEST_CASE("the optimizer flags reach the run: --optimizer radam, --adam-beta2, --hold (lr 0), --intervene", "[binaries][optimizer]") {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_optimizer_flags_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const Result r = run(path_of("train"), "--steps 4 --eval-every 0 --eval-batches 1 --optimizer radam --adam-beta2 0.99 "
                                         "--hold 3 --intervene detach-skip --placement post --out '" + dir.string() + "'");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  REQUIRE(r.out.find("radam(beta1 0.9, beta2 0.99, eps 1e-08), hold 3, intervene detach-skip") != std::string::npos);
  std::stringstream csv(gs::nn::read_file(dir / "train.csv"));
  std::vector<double> lrs;
  for (std::string line; std::getline(csv, line);) {
    if (line.empty() || !std::isdigit(static_cast<unsigned char>(line[0]))) continue;  // the header
    std::stringstream cells(line);
    std::string step, loss, lr;
    std::getline(cells, step, ','), std::getline(cells, loss, ','), std::getline(cells, lr, ',');
    lrs.push_back(std::stod(lr));
  }
  REQUIRE(lrs.size() == 4);
  REQUIRE(lrs[0] == 0.0);
  REQUIRE(lrs[2] == 0.0);
  REQUIRE(lrs[3] > 0.0);  // the schedule starts after the hold
  fs::remove_all(dir);
  const Result w = run(path_of("warmup"), "--layers 2 --d-model 8 --heads 2 --seq 6 --batch 3 --steps 2 --window 1 "
                                          "--eval-batches 1 --datasets markov --lrs 0.01 --warmups 0 --placements post,pre --intervene freeze-ln "
                                          "--adam-beta1 0.5 --out '" + dir.string() + "'");
  REQUIRE(w.status == 0);
  REQUIRE(w.out.find("adam(beta1 0.5, beta2 0.98, eps 1e-08), intervene freeze-ln") != std::string::npos);
  fs::remove_all(dir);
  require_refused(run(path_of("train"), "--intervene detach-everything"), 2, "train", {"--intervene", "detach-everything"});
  require_refused(run(path_of("dynamics"), "--adam-beta2 1"), 2, "dynamics", {"--adam-beta2", "<= 0.999999999"});
  require_refused(run(path_of("warmup"), "--optimizer lion"), 2, "warmup", {"--optimizer", "radam"});
}

TEST_CASE("train --temperature 0 samples greedily: the most likely token, not token 0", "[binaries]") {
  const Result r = run(path_of("train"), "--steps 30 --eval-every 0 --eval-batches 1 --sample 40 --temperature 0");
  REQUIRE(r.status == 0);
  const std::string sample = r.out.substr(r.out.find("sample:\n") + 8);
  REQUIRE(std::set<char>(sample.begin(), sample.end() - 1).size() >= 2);  // after 30 steps it predicts the chain
}

TEST_CASE("every grid binary: two shards merged print the tables and write the files of the unsharded run",
          "[binaries][shards]") {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_shards_" + std::to_string(::getpid()));
  const std::string model = " --d-model 8 --heads 2 --seq 6 --batch 3 --seeds 2";
  for (const auto& [name, args] : std::vector<std::pair<std::string, std::string>>{
           {"gradflow", model + " --depths 1,2"},
           {"amplification", model + " --depths 1,2 --placements post,rezero"},
           {"paths", model + " --layers-list 1,2 --placements post,pre/rms"},
           {"stream", model + " --layers-list 1,2 --placements pre,deepnorm --steps 2"},
           {"dynamics", model + " --layers 2 --steps 4 --early 2 --eval-batches 1 --warmups 0,2"},
           {"paths_training", model + " --layers 2 --steps 3 --profile-steps 0,3 --eval-batches 1 --warmups 0,2"},
           {"causes", model + " --layers 2 --steps 4 --window 2 --eval-batches 1 --warmups 2 --hold 2 --control-steps 2 "
                             "--group-warmup 2 --boost-steps 1 --reset-step 2"},
           {"warmup", model + " --layers 2 --steps 4 --window 2 --eval-batches 1 --datasets markov --lrs 0.01,0.1 "
                              "--placements post,pre --warmups 0"},
           {"sharpness", model + " --layers 2 --steps 4 --every 2 --eval-batches 1 --lrs 0.01 --warmups 0,2 "
                                 "--placements post,pre --lanczos-iterations 5"},
           {"lrsweep", model + " --layers 1 --steps 4 --warmup 2 --eval-batches 1 --lrs 0.01,0.1 --variants pre,post+warmup"}}) {
    INFO(name << args);
    fs::remove_all(dir);
    for (const char* sub : {"whole", "merged"}) fs::create_directories(dir / sub);
    const std::string bin = path_of(name);
    const Result whole = run(bin, args + " --out o", dir / "whole");
    REQUIRE(whole.status == 0);
    REQUIRE(run(bin, args + " --shard 1/2 --out '" + (dir / "s1").string() + "'").status == 0);
    REQUIRE(run(bin, args + " --shard 2/2 --jobs 1 --out '" + (dir / "s2").string() + "'").status == 0);
    const Result merged = run(bin, args + " --merge '" + (dir / "s1").string() + "','" + (dir / "s2").string() + "' --out o",
                              dir / "merged");
    REQUIRE(merged.status == 0);
    auto tables = [](const std::string& out) {  // stdout without the timings
      std::string kept, line;
      std::stringstream lines(out);
      while (std::getline(lines, line))
        if (line.find("time:") == std::string::npos) kept += line + "\n";
      return kept;
    };
    REQUIRE(tables(merged.out) == tables(whole.out));
    std::size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir / "whole" / "o")) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".csv" && ext != ".dat" && ext != ".gp") continue;
      INFO(entry.path().filename());
      REQUIRE(gs::nn::read_file(dir / "merged" / "o" / entry.path().filename()) == gs::nn::read_file(entry.path()));
      ++files;
    }
    REQUIRE(files >= 3);
    // A shard missing, or shards of other flags, is refused.
    require_refused(run(bin, args + " --merge '" + (dir / "s1").string() + "' --out '" + (dir / "m").string() + "'"), 1, name, {"shard 2 of 2 is missing"});
    require_refused(run(bin, args + " --seed 7 --merge '" + (dir / "s1").string() + "','" + (dir / "s2").string() + "' --out '" + (dir / "m").string() + "'"),
                    1, name, {"flags"});
  }
  fs::remove_all(dir);
}

TEST_CASE("the binaries that draw one plot per placement name its file after a triple without its '/'",
          "[binaries][zoo]") {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_triples_" + std::to_string(::getpid()));
  const std::string model = " --d-model 8 --heads 2 --seq 6 --batch 3 --seeds 1 --placements post,pre/rms";
  for (const auto& [name, args, plot] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"stream", model + " --layers-list 1 --steps 2", "split_pre-rms-none_L1.png"},
           {"dynamics", model + " --layers 2 --steps 4 --early 2 --eval-batches 1 --warmups 0", "grads_pre-rms-none_w0.png"},
           {"warmup", model + " --layers 2 --steps 4 --window 2 --eval-batches 1 --datasets markov --lrs 0.01 --warmups 0",
            "curves_markov_pre-rms-none.png"}}) {
    INFO(name << args);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const Result r = run(path_of(name), args + " --out o", dir);
    REQUIRE(r.status == 0);
    REQUIRE(fs::exists(dir / "o" / plot));
  }
  fs::remove_all(dir);
}

TEST_CASE("the zoo's axis flags (norm, residual, mixln-post, dyt-alpha) set what --placement and every "
          "--placements entry build; a refused combination is one line naming it",
          "[binaries][zoo]") {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_axes_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string tiny = " --d-model 8 --heads 2 --seq 6 --batch 3 --seeds 1 --depths 1,2";
  const Result grid = run(path_of("gradflow"), tiny + " --placements post,pre --norm rms --out '" + (dir / "g").string() + "'");
  INFO(grid.out << grid.err);
  REQUIRE(grid.status == 0);
  REQUIRE(grid.out.find("post/rms/none") != std::string::npos);
  REQUIRE(grid.out.find("pre/rms/none") != std::string::npos);
  require_refused(run(path_of("gradflow"), tiny + " --placements post,pre --residual admin"), 2, "gradflow",
                  {"pre/layer/admin (--residual admin)", "needs placement post"});
  require_refused(run(path_of("train"), "--placement mixln --layers 2 --mixln-post 3"), 2, "train",
                  {"mixln_post 3 is more than the 2 layers"});

  const Result train = run(path_of("train"), "--placement pre --norm dyt --dyt-alpha 0.25 --residual lns --layers 4 "
                                             "--steps 1 --eval-every 0 --eval-batches 1 --dump '" + (dir / "d").string() + "'");
  REQUIRE(train.status == 0);
  const std::string config = gs::nn::read_file(dir / "d" / "config.json");
  REQUIRE(config.find("\"norm\": \"dyt\"") != std::string::npos);
  REQUIRE(config.find("\"residual\": \"lns\"") != std::string::npos);
  REQUIRE(config.find("\"dyt_alpha\": 0.25") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("train --seeds N: the mean and sd of the final figures are those of the N one-seed runs", "[binaries]") {
  const std::string flags = " --steps 6 --eval-every 0 --eval-batches 2 --d-model 8 --heads 2 --seq 8 --batch 4 --layers 1";
  auto number_after = [](const std::string& text, const std::string& label) {
    const std::size_t at = text.rfind(label);
    REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + label.size()));
  };
  std::vector<double> losses;
  for (const char* seed : {"4", "5", "6"}) {
    const Result one = run(path_of("train"), std::string("--seed ") + seed + flags);
    REQUIRE(one.status == 0);
    losses.push_back(number_after(one.out, "final: validation loss "));
  }
  const Result three = run(path_of("train"), "--seed 4 --seeds 3" + flags);
  INFO(three.out << three.err);
  REQUIRE(three.status == 0);
  REQUIRE(three.out.find("over 3 seeds (4..6, mean ± sd)") != std::string::npos);
  const double mean = (losses[0] + losses[1] + losses[2]) / 3.0;
  double var = 0.0;
  for (double l : losses) var += (l - mean) * (l - mean) / 2.0;  // the sample sd, as stat_of
  const std::string summary = three.out.substr(three.out.find("over 3 seeds"));
  REQUIRE(number_after(summary, "validation loss ") == Approx(mean).margin(5e-4));
  const std::string loss_part = summary.substr(0, summary.find(", gap"));
  REQUIRE(number_after(loss_part, "± ") == Approx(std::sqrt(var)).epsilon(0.05).margin(5e-4));
  REQUIRE(losses[0] != losses[1]);  // the seeds differ
  require_refused(run(path_of("train"), "--seeds 2 --save ck" + flags), 2, "train", {"--save", "--seeds 2"});
}

TEST_CASE("train --graph FILE --graph-step N draws the pass of training step N; other binaries refuse N > 0",
          "[binaries][graph]") {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_graph_step_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string flags = "--layers 1 --d-model 8 --heads 2 --seq 4 --batch 2 --optimizer adam --clip 0 --warmup 0 "
                            "--schedule warmup --lr 0.01 --steps 3 --eval-every 0 --eval-batches 1";
  // the loss of step 2's pass, as the training run prints it in train.csv (step 3: after 2 updates)
  const Result t = run(path_of("train"), flags + " --out '" + (dir / "run").string() + "'");
  REQUIRE(t.status == 0);
  std::stringstream csv(gs::nn::read_file(dir / "run" / "train.csv"));
  std::string line, loss;
  for (int k = 0; k < 3 && std::getline(csv, line);) k += std::isdigit(static_cast<unsigned char>(line[0])) ? 1 : 0;
  std::stringstream cells(line);
  std::getline(cells, loss, ','), std::getline(cells, loss, ',');
  const Result g = run(path_of("train"), flags + " --graph '" + (dir / "g.dot").string() + "' --graph-step 2");
  INFO(g.out << g.err);
  REQUIRE(g.status == 0);
  const std::string dot = gs::nn::read_file(dir / "g.dot");
  REQUIRE(dot.find("at step 2: loss ") != std::string::npos);
  const double drawn = std::stod(dot.substr(dot.find("at step 2: loss ") + 16));
  REQUIRE(std::abs(drawn - std::stod(loss)) < 1e-6);  // the title prints 6 decimals
  const Result g0 = run(path_of("train"), flags + " --graph '" + (dir / "g0.dot").string() + "'");
  REQUIRE(g0.status == 0);
  REQUIRE(gs::nn::read_file(dir / "g0.dot").find("at init: loss ") != std::string::npos);
  fs::remove_all(dir);
  require_refused(run(path_of("gradflow"), "--graph g.svg --graph-step 3"), 2, "gradflow", {"--graph-step 3", "initialization only"});
  require_refused(run(path_of("train"), "--graph-step 3"), 2, "train", {"--graph-step", "--graph FILE"});
}

namespace {

// A tiny run of each binary: the base that each numeric flag's extreme value is tried on.
const std::map<std::string, std::string> tiny_run = [] {
  const std::string model = "--layers 1 --d-model 8 --heads 2 --seq 6 --batch 3 --vocab 8";
  const std::string lean = model + " --seeds 1 --jobs 1", grid = lean + " --eval-batches 1";
  return std::map<std::string, std::string>{
      {"train", model + " --steps 3 --eval-every 0 --eval-batches 1 --warmup 1"},
      {"warmup", grid + " --steps 3 --window 1 --lrs 0.01 --warmups 0 --placements post --datasets markov"},
      {"causes", grid + " --steps 3 --window 1 --rows none --placements post"},
      {"dynamics", grid + " --steps 3 --early 1 --early-window 2 --warmups 0 --placements post"},
      {"lrsweep", grid + " --steps 3 --variants pre --lrs 0.01"},
      {"sharpness", grid + " --steps 3 --every 3 --lrs 0.01 --warmups 0 --placements post --lanczos-iterations 2"},
      {"amplification", lean + " --depths 1,2 --placements pre"},
      {"gradflow", lean + " --depths 1 --placements pre"},
      {"stream", "--d-model 8 --heads 2 --seq 6 --batch 3 --vocab 8 --seeds 1 --jobs 1 --layers-list 1 --placements pre"},
      {"tape_demo", ""}, {"bench_curvature", ""}, {"bench_engine_overhead", ""}, {"bench_train_step", ""}};
}();

// `args` without the flag `flag` and its value (a flag given twice is refused).
std::string without_flag(const std::string& args, const std::string& flag) {
  std::stringstream words(args);
  std::string out, word;
  while (words >> word) {
    if (word == flag) { words >> word; continue; }
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

bool has_non_finite_number(const std::string& text) {
  std::stringstream words(text);
  for (std::string w; words >> w;) {
    std::string lower;
    for (char c : w) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "nan" || lower == "inf" || lower == "-nan" || lower == "-inf") return true;
  }
  return false;
}

// Every numeric flag of `name` at 0 and, for a real number, at 1e308 and 1e-320 (extremes its range
// accepts): the run is refused in one last line naming the flag, or it ends with exit 0 and prints only
// finite numbers, or (a grid's verdict) the blow-up it reports as such.
void check_extremes(const std::string& name) {
  const std::string binary = path_of(name);
  const std::string base = tiny_run.at(name);
  const bool writes = !base.empty();  // the experiments write into --out
  for (const NumericFlag& f : numeric_flags(run(binary, "--help").out)) {
    const std::string& flag = f.flag;
    for (const std::string& value : f.real ? std::vector<std::string>{"0", "1e308", "1e-320"} : std::vector<std::string>{"0"}) {
      const fs::path dir = fs::temp_directory_path() / ("gradscope_test_extremes_" + std::to_string(::getpid()));
      fs::remove_all(dir);
      fs::create_directories(dir);
      const Result r = run(binary, without_flag(base, flag) + " " + flag + " " + value + (writes ? " --out o" : ""), dir);
      fs::remove_all(dir);
      INFO(name << " " << flag << " " << value << "\nstdout: " << r.out << "\nstderr: " << r.err);
      if (r.status == 0) {
        const bool blow_up_reported = r.out.find("diverged") != std::string::npos || r.out.find("blew up") != std::string::npos;
        CHECK((!has_non_finite_number(r.out) || blow_up_reported));
      } else {
        CHECK((r.status == 1 || r.status == 2));
        const std::string last = gs::test::last_line(r.err);  // after the progress line, if any
        CHECK(last.rfind(name + ": error: ", 0) == 0);
        CHECK(last.find(flag) != std::string::npos);
      }
    }
  }
}

}  // namespace

TEST_CASE("extremes that the ranges accept train, or are refused naming the flag: train and the small binaries",
          "[binaries][ranges][extremes]") {
  for (const char* name : {"train", "tape_demo", "gradflow", "stream", "amplification", "bench_curvature",
                           "bench_engine_overhead", "bench_train_step"})
    check_extremes(name);
}

TEST_CASE("extremes that the ranges accept train, or are refused naming the flag: warmup, causes, dynamics",
          "[binaries][ranges][extremes]") {
  for (const char* name : {"warmup", "causes", "dynamics"}) check_extremes(name);
}

TEST_CASE("extremes that the ranges accept train, or are refused naming the flag: lrsweep, sharpness",
          "[binaries][ranges][extremes]") {
  for (const char* name : {"lrsweep", "sharpness"}) check_extremes(name);
}

}  // namespace test_binaries
