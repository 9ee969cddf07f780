#include "experiments/lib/shard.hpp"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>

#include "engine/error.hpp"
#include "experiments/lib/stats.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::experiments {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<std::size_t> Shard::cells(std::size_t grid_size) const {
  std::vector<std::size_t> out;
  for (std::size_t c = k - 1; c < grid_size; c += n) out.push_back(c);
  return out;
}

Shard parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  return {std::stoul(text.substr(0, slash)), std::stoul(text.substr(slash + 1))};
}

std::string json_message(const json::exception& e) {
  const std::string what = e.what();  // "[json.exception.type_error.302] type must be number, but is string"
  const std::size_t end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

namespace {

// ---- NaN and infinities, which JSON has no numbers for (nlohmann writes them as null) ----

std::uint64_t bits_of(double v) { return std::bit_cast<std::uint64_t>(v); }
const std::uint64_t nan_bits = bits_of(std::numeric_limits<double>::quiet_NaN());
const std::uint64_t negative_nan_bits = nan_bits | (std::uint64_t{1} << 63);  // what 0/0 gives on x86

std::string non_finite_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (bits_of(v) == nan_bits) return "nan";
  if (bits_of(v) == negative_nan_bits) return "-nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "nan:0x%016" PRIx64, bits_of(v));
  return buf;
}

std::optional<double> non_finite_value(const std::string& text) {
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  if (text == "nan") return std::bit_cast<double>(nan_bits);
  if (text == "-nan") return std::bit_cast<double>(negative_nan_bits);
  std::uint64_t bits = 0;
  int used = 0;
  if (text.rfind("nan:0x", 0) == 0 && std::sscanf(text.c_str() + 6, "%" SCNx64 "%n", &bits, &used) == 1 &&
      6 + static_cast<std::size_t>(used) == text.size() && std::isnan(std::bit_cast<double>(bits)))
    return std::bit_cast<double>(bits);
  return std::nullopt;
}

// Every non-finite number under j as its text, and back.
void encode_non_finite(json& j) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) j = non_finite_text(j.get<double>());
  if (j.is_structured())
    for (json& e : j) encode_non_finite(e);
}

void decode_non_finite(json& j) {
  if (j.is_string())
    if (const std::optional<double> v = non_finite_value(j.get_ref<const std::string&>())) j = *v;
  if (j.is_structured())
    for (json& e : j) decode_non_finite(e);
}

// ---- what --merge accepts as a value a run wrote ----
// Checked by the quantity's name, the names every grid experiment's result shares. A cross-entropy
// ("loss", "losses", "final_loss", "init_loss") is >= 0 (NaN or +Inf where the run blew up); a step
// number or count ("blew_up", "steps") is a whole number >= 0; a "verdict" is a code of Verdict
// (training.hpp). A cell that blew up at step k > 0 has k training losses, a NaN final loss (no
// evaluation was made) and the verdict diverged.
std::string number_text(double v) { return fmt(v, 17); }  // every digit: the value exactly as the file has it

bool is_loss(const std::string& name) { return name == "loss" || name == "losses" || name == "final_loss" || name == "init_loss"; }
bool is_step(const std::string& name) { return name == "blew_up" || name == "steps"; }

void check_value(const std::string& name, double v, const std::string& where) {
  if (is_loss(name) && v < 0.0)
    throw Error(where + " has " + name + " " + number_text(v) + ", not a loss (a cross-entropy is >= 0)");
  if (is_step(name) && !(v >= 0.0 && v == std::floor(v) && v < 1e15))
    throw Error(where + " has " + name + " " + number_text(v) + ", not a step number (a whole number >= 0)");
  if (name == "verdict" && !(v == 0.0 || v == 1.0 || v == 2.0))  // trained 0, stuck 1, diverged 2
    throw Error(where + " has verdict " + number_text(v) + ", not a verdict code (0 trained, 1 stuck, 2 diverged)");
}

// Every number under `j`, checked by the name of the quantity it is (or is an element of): a list's
// elements by the list's name, an object's members (a step's record) by their own names.
void check_numbers(const nlohmann::json& j, const std::string& name, const std::string& where) {
  if (j.is_object())
    for (const auto& [key, value] : j.items()) check_numbers(value, key, where);
  else if (j.is_array())
    for (const nlohmann::json& e : j) check_numbers(e, name, where);
  else if (j.is_number())
    check_value(name, j.get<double>(), where);
}

// A number of the result, or NaN where it has none of that name.
double number(const nlohmann::json& result, const char* name) {
  const auto it = result.find(name);
  return it != result.end() && it->is_number() ? it->get<double>() : NAN;
}

// What a cell that blew up must be, as its run wrote it: blew_up = k > 0 is the step of the first
// non-finite loss, at which the run stopped, so there are k training losses, the final loss is NaN (no
// evaluation was made) and the verdict is diverged (2).
void check_blow_up(const nlohmann::json& result, const std::string& where) {
  const double k = number(result, "blew_up");
  if (std::isnan(k) || k == 0.0) return;
  if (const auto losses = result.find("losses"); losses != result.end() && losses->is_array() &&
                                                 static_cast<double>(losses->size()) != k)
    throw Error(where + " has blew_up " + number_text(k) + " but " + std::to_string(losses->size()) +
                " training losses (a run stops at the step it blows up)");
  if (const double final_loss = number(result, "final_loss"); result.contains("final_loss") && !std::isnan(final_loss))
    throw Error(where + " has blew_up " + number_text(k) + " but a final loss of " + number_text(final_loss) +
                " (a run that blew up has none: NaN)");
  if (const double verdict = number(result, "verdict"); result.contains("verdict") && verdict != 2.0)
    throw Error(where + " has blew_up " + number_text(k) + " but verdict " + number_text(verdict) + ", not 2 (diverged)");
}

// Throws gs::Error("WHERE has final_loss -7, not a loss ...") for the first value `result` (a cell's
// result, non-finite numbers already decoded) could not hold; `where` is "--merge DIR: cell 3".
void check_values(const nlohmann::json& result, const std::string& where) {
  check_numbers(result, "", where);
  check_blow_up(result, where);
}

// ---- the shards of one run ----

// The flags in an order of their own: the same flags given in another order (or listed by --help in
// another order) are the same run.
std::vector<std::string> flag_words(const std::string& flags) {
  std::istringstream in(flags);
  std::vector<std::string> words{std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
  std::sort(words.begin(), words.end());
  return words;
}

// The shard that DIR holds (its shard.json: `file`), after checking that its program and flags are this
// run's and that it is the only one of its number; shard_of[k - 1] records the directory of shard k.
Shard check_shard(const std::string& dir, const json& file, const std::string& program, const std::string& flags,
                  std::vector<std::string>& shard_of) {
  const std::string its_program = file.at("program").get<std::string>(), its_flags = file.at("flags").get<std::string>();
  if (its_program != program) throw Error("--merge " + dir + ": its cells were measured by " + its_program + ", not " + program);
  if (flag_words(its_flags) != flag_words(flags))
    throw Error("--merge " + dir + ": its cells were measured with the flags '" + its_flags + "', this run has '" + flags +
                "' (give the merge the flags the shards had)");
  const std::string text = file.at("shard").get<std::string>();
  std::size_t k = 0, n = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%zu/%zu%n", &k, &n, &used) != 2 || static_cast<std::size_t>(used) != text.size() || k < 1 ||
      k > n || n > 1000000)
    throw Error("--merge " + dir + ": " + shard_file + " says shard '" + text + "', not K/N with 1 <= K <= N");
  if (shard_of.empty()) shard_of.resize(n);
  if (n != shard_of.size())
    throw Error("--merge " + dir + ": shard " + std::to_string(k) + " of " + std::to_string(n) + ", the others are of " +
                std::to_string(shard_of.size()));
  if (!shard_of[k - 1].empty()) throw Error("--merge: " + dir + " and " + shard_of[k - 1] + " both hold shard " + std::to_string(k));
  shard_of[k - 1] = dir;
  return {k, n};
}

// One cell of a shard's "cells" into merged[c], checked: a cell of this shard, at this grid's labels,
// once, with the quantities of `blank` and values a run could have written.
void read_cell(json cell, const std::string& dir, const Grid& grid, const Shard& s, const json& blank,
               std::vector<std::optional<MergedCell>>& merged) {
  const std::size_t c = cell.at("cell").get<std::size_t>();
  const std::string where = "--merge " + dir + ": cell " + std::to_string(c);
  if (c >= grid.size() || c % s.n != s.k - 1) throw Error(where + " is not one of shard " + std::to_string(s.k));
  const json& at = cell.at("at");
  for (std::size_t a = 0; a < grid.names().size(); ++a) {
    const std::string& name = grid.names()[a];
    const std::string its = at.contains(name) ? at[name].get<std::string>() : "(none)";
    if (its != grid.labels(a)[grid.position(c, a)])
      throw Error(where + " has " + name + " " + its + ", this run's grid " + grid.labels(a)[grid.position(c, a)] +
                  " (were the shards run with other flags?)");
  }
  if (merged[c]) throw Error(where + " twice");
  MergedCell m{std::move(cell.at("result")), where + " (" + grid.describe(c) + ")"};
  if (!m.result.is_object()) throw Error(m.origin + ": its result is not a JSON object");
  for (const auto& [name, value] : blank.items())
    if (!m.result.contains(name)) throw Error(m.origin + ": no quantity named " + name);
  for (const auto& [name, value] : m.result.items())
    if (!blank.contains(name)) throw Error(m.origin + ": " + name + " is not a quantity this program measures");
  decode_non_finite(m.result);
  check_values(m.result, where);
  merged[c] = std::move(m);
}

}  // namespace

void write_shard(const fs::path& dir, const Grid& grid, const std::vector<std::size_t>& cells,
                 const std::vector<json>& results, const std::string& program, const Shard& shard,
                 const std::string& flags) {
  std::string text = "{\"program\": " + json(program).dump() + ", \"shard\": " +
                     json(std::to_string(shard.k) + "/" + std::to_string(shard.n)).dump() + ", \"flags\": " +
                     json(flags).dump() + ", \"cells\": [\n";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    json at = json::object();
    for (std::size_t a = 0; a < grid.names().size(); ++a) at[grid.names()[a]] = grid.labels(a)[grid.position(cells[i], a)];
    json result = results.at(i);
    encode_non_finite(result);
    text += "{\"cell\": " + std::to_string(cells[i]) + ", \"at\": " + at.dump() + ", \"result\": " + result.dump() + "}" +
            (i + 1 < cells.size() ? ",\n" : "\n");
  }
  fs::create_directories(dir);
  nn::write_file_atomically(dir / shard_file, text + "]}\n");
  std::printf("%s: shard %zu/%zu: %zu of the grid's %zu cells measured, written to %s; the tables: %s --merge "
              "DIR1,DIR2,... with the same flags\n",
              program.c_str(), shard.k, shard.n, cells.size(), grid.size(), (dir / shard_file).string().c_str(),
              program.c_str());
}

std::vector<MergedCell> read_shards(const std::vector<std::string>& dirs, const Grid& grid, const std::string& program,
                                    const std::string& flags, const json& blank) {
  std::vector<std::optional<MergedCell>> merged(grid.size());
  std::vector<std::string> shard_of;  // shard_of[k - 1]: the directory that held shard k
  for (const std::string& dir : dirs) {
    const fs::path path = fs::path(dir) / shard_file;
    if (!fs::exists(path))
      throw Error("--merge " + dir + ": it holds no " + shard_file + " (the --out of a --shard run holds one)");
    json file;
    try {
      file = json::parse(nn::read_file(path));
    } catch (const json::parse_error& e) {
      throw Error("--merge " + dir + ": " + shard_file + " is not JSON (" + json_message(e) +
                  "); the file was cut short or changed after the shard wrote it");
    }
    try {
      const Shard s = check_shard(dir, file, program, flags, shard_of);
      for (json& cell : file.at("cells")) read_cell(std::move(cell), dir, grid, s, blank, merged);
    } catch (const json::exception& e) {
      throw Error("--merge " + dir + ": " + shard_file + " is not a shard's file: " + json_message(e));
    }
  }
  for (std::size_t k = 0; k < shard_of.size(); ++k)
    if (shard_of[k].empty()) throw Error("--merge: shard " + std::to_string(k + 1) + " of " + std::to_string(shard_of.size()) + " is missing");
  std::vector<MergedCell> out;
  for (std::size_t c = 0; c < grid.size(); ++c) {
    if (!merged[c]) throw Error("--merge: no shard measured cell " + std::to_string(c) + " (" + grid.describe(c) + ")");
    out.push_back(std::move(*merged[c]));
  }
  return out;
}

}  // namespace gs::experiments
