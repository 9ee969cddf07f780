#include "experiments/lib/grid.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/checksum.hpp"

namespace gs::experiments {

// ---- Grid ----

Grid& Grid::axis(const std::string& name, const std::vector<std::string>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].find_first_of(",\n\"") != std::string::npos)
      throw Error("grid: the label '" + labels[i] + "' of axis " + name + " has a comma, quote or newline");
    if (std::find(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(i), labels[i]) != labels.begin() + i)
      throw Error("grid: axis " + name + " has the label '" + labels[i] + "' twice");
  }
  names_.push_back(name);
  labels_.push_back(labels);
  return *this;
}

std::size_t Grid::size() const {
  std::size_t n = 1;
  for (const auto& l : labels_) n *= l.size();
  return n;
}

std::size_t Grid::axis_index(const std::string& name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) throw Error("grid: no axis named " + name);
  return static_cast<std::size_t>(it - names_.begin());
}

std::size_t Grid::position(std::size_t cell, std::size_t axis) const {
  for (std::size_t a = labels_.size(); a-- > axis + 1;) cell /= labels_[a].size();  // the faster axes
  return cell % labels_.at(axis).size();
}

std::size_t Grid::cell(const std::vector<std::size_t>& positions) const {
  if (positions.size() != labels_.size())
    throw Error("grid: " + std::to_string(positions.size()) + " positions for " + std::to_string(labels_.size()) + " axes");
  std::size_t c = 0;
  for (std::size_t a = 0; a < labels_.size(); ++a) c = c * labels_[a].size() + positions[a];
  return c;
}

std::string Grid::describe(std::size_t cell) const {
  std::string s;
  for (std::size_t a = 0; a < names_.size(); ++a) {
    const std::string& l = labels_[a][position(cell, a)];
    s += (a ? ", " : "") + (names_[a] == "placement" || names_[a] == "dataset" ? l : names_[a] + " " + l);
  }
  return s;
}

// ---- Record ----

const std::vector<double>& Record::list(const std::string& name) const {
  const auto it = quantities_.find(name);
  if (it == quantities_.end()) throw Error((origin_.empty() ? "record" : origin_) + ": no quantity named " + name);
  return it->second;
}

double Record::get(const std::string& name) const {
  const std::vector<double>& v = list(name);
  if (v.size() != 1)
    throw Error((origin_.empty() ? "record" : origin_) + ": " + name + " is a list of " + std::to_string(v.size()) +
                ", not one number");
  return v[0];
}

std::size_t index_in(const std::vector<std::size_t>& values, std::size_t value) {
  const auto it = std::find(values.begin(), values.end(), value);
  if (it == values.end()) throw Error("grid: " + std::to_string(value) + " is not among the axis's values");
  return static_cast<std::size_t>(it - values.begin());
}

std::vector<std::string> labels(const std::vector<std::size_t>& values) {
  std::vector<std::string> out;
  for (std::size_t v : values) out.push_back(std::to_string(v));
  return out;
}

std::vector<std::string> labels(const std::vector<unsigned>& values) {
  std::vector<std::string> out;
  for (unsigned v : values) out.push_back(std::to_string(v));
  return out;
}

std::string label(double value) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;  // the shortest text that reads back exactly
  return std::string(buf, end);
}

std::vector<std::string> labels(const std::vector<double>& values) {
  std::vector<std::string> out;
  for (double v : values) out.push_back(label(v));
  return out;
}

// ---- shards ----

std::vector<std::size_t> Shard::cells(std::size_t grid_size) const {
  std::vector<std::size_t> out;
  for (std::size_t c = k - 1; c < grid_size; c += n) out.push_back(c);
  return out;
}

Shard parse_shard(const std::string& text) {  // already checked by the --shard flag's range
  const std::size_t slash = text.find('/');
  return {std::stoul(text.substr(0, slash)), std::stoul(text.substr(slash + 1))};
}

void write_shard(const std::filesystem::path& dir, const Grid& grid, const std::vector<std::size_t>& cells,
                 const std::vector<Record>& records, const std::string& program, const Shard& shard,
                 const std::string& flags) {
  std::string csv = "cell";
  for (const std::string& name : grid.names()) csv += "," + name;
  csv += ",quantity,values\n";
  char buf[32];
  for (std::size_t c : cells) {
    std::string key = std::to_string(c);
    for (std::size_t a = 0; a < grid.names().size(); ++a) key += "," + grid.labels(a)[grid.position(c, a)];
    if (records[c].quantities().empty()) csv += key + ",,\n";  // a cell that measured nothing is still there
    for (const auto& [name, values] : records[c].quantities()) {
      csv += key + "," + name + ",";
      for (std::size_t i = 0; i < values.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%.17g", values[i]);  // 17 digits: every double reads back exactly
        if (i) csv += ' ';
        csv += buf;
      }
      csv += "\n";
    }
  }
  std::filesystem::create_directories(dir);
  nn::write_file_atomically(dir / "cells.csv", csv);
  // cells.csv's SHA-256 (what `sha256sum cells.csv` prints): a merge refuses a file changed since.
  nn::write_file_atomically(dir / "shard.txt", "program " + program + "\nshard " + std::to_string(shard.k) + "/" +
                                                   std::to_string(shard.n) + "\nflags " + flags + "\ncells_sha256 " +
                                                   nn::sha256_hex(csv) + "\n");
}

namespace {

// The value of "key VALUE" in shard.txt.
std::string shard_field(const std::string& text, const std::string& key, const std::string& dir) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(key + " ", 0) == 0 || line == key) return line.size() > key.size() ? line.substr(key.size() + 1) : "";
  throw Error("--merge " + dir + ": shard.txt has no " + key + " line");
}

std::string text_of_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

}  // namespace

namespace {

// The flags line of a shard in an order of its own: the same flags given in another order (or listed by
// --help in another order) are the same run.
std::vector<std::string> flag_words(const std::string& flags) {
  std::istringstream in(flags);
  std::vector<std::string> words{std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
  std::sort(words.begin(), words.end());
  return words;
}

// The shard that DIR holds (shard.txt: `meta`), after checking that its program and flags are this run's
// and that it is the only one of its number; shard_of[k - 1] records the directory of shard k.
Shard check_shard(const std::string& dir, const std::string& meta, const std::string& program, const std::string& flags,
                  std::vector<std::string>& shard_of) {
  if (shard_field(meta, "program", dir) != program)
    throw Error("--merge " + dir + ": its cells were measured by " + shard_field(meta, "program", dir) + ", not " + program);
  if (flag_words(shard_field(meta, "flags", dir)) != flag_words(flags))
    throw Error("--merge " + dir + ": its cells were measured with the flags '" + shard_field(meta, "flags", dir) +
                "', this run has '" + flags + "' (give the merge the flags the shards had)");
  const Shard s = parse_shard(shard_field(meta, "shard", dir));
  if (shard_of.empty()) shard_of.resize(s.n);
  if (s.n != shard_of.size())
    throw Error("--merge " + dir + ": shard " + std::to_string(s.k) + " of " + std::to_string(s.n) + ", the others are of " +
                std::to_string(shard_of.size()));
  if (!shard_of[s.k - 1].empty()) throw Error("--merge: " + dir + " and " + shard_of[s.k - 1] + " both hold shard " + std::to_string(s.k));
  shard_of[s.k - 1] = dir;
  return s;
}

// A merged value is checked as the run that wrote it would have made it, by its quantity's name, the
// names every grid experiment shares: a cross-entropy is >= 0 (NaN or +Inf where the run blew up), a
// step number or count is a whole number >= 0, a verdict is a code of Verdict (training.hpp).
bool is_loss(const std::string& name) { return name == "loss" || name == "losses" || name == "final_loss" || name == "init_loss"; }
bool is_step(const std::string& name) { return name == "blew_up" || name == "steps"; }

void check_value_range(const std::string& name, const std::vector<double>& values, const std::string& where) {
  for (double v : values) {
    if (is_loss(name) && v < 0.0)
      throw Error(where + " has " + name + " " + text_of_number(v) + ", not a loss (a cross-entropy is >= 0)");
    if (is_step(name) && !(v >= 0.0 && v == std::floor(v) && v < 1e15))
      throw Error(where + " has " + name + " " + text_of_number(v) + ", not a step number (a whole number >= 0)");
    if (name == "verdict" && !(v == 0.0 || v == 1.0 || v == 2.0))  // trained 0, stuck 1, diverged 2
      throw Error(where + " has verdict " + text_of_number(v) + ", not a verdict code (0 trained, 1 stuck, 2 diverged)");
  }
}

// What a cell that blew up must be, as its run wrote it: blew_up = k > 0 is the step of the first
// non-finite loss, at which the run stopped, so there are k training losses, the final loss is NaN (no
// evaluation was made) and the verdict is diverged (2).
void check_blow_up(const Record& r, const std::string& where) {
  if (!r.has("blew_up")) return;
  const double k = r.get("blew_up");
  if (k == 0.0) return;
  if (r.has("losses") && static_cast<double>(r.list("losses").size()) != k)
    throw Error(where + " has blew_up " + text_of_number(k) + " but " + std::to_string(r.list("losses").size()) +
                " training losses (a run stops at the step it blows up)");
  if (r.has("final_loss") && !std::isnan(r.get("final_loss")))
    throw Error(where + " has blew_up " + text_of_number(k) + " but a final loss of " + text_of_number(r.get("final_loss")) +
                " (a run that blew up has none: NaN)");
  if (r.has("verdict") && r.get("verdict") != 2.0)
    throw Error(where + " has blew_up " + text_of_number(k) + " but verdict " + text_of_number(r.get("verdict")) +
                ", not 2 (diverged)");
}

// One row of a shard's cells.csv ("cell,<axes...>,quantity,values") into records; seen[cell] = true.
void read_row(const std::vector<std::string>& f, const std::string& where, const Grid& grid, const Shard& s,
              std::vector<Record>& records, std::vector<bool>& seen) {
  const std::size_t axes = grid.names().size();
  if (f.size() != axes + 3) throw Error(where + " has " + std::to_string(f.size()) + " fields, not " + std::to_string(axes + 3));
  const std::size_t c = std::strtoul(f[0].c_str(), nullptr, 10);
  if (c >= grid.size() || c % s.n != s.k - 1) throw Error(where + ": cell " + f[0] + " is not one of shard " + std::to_string(s.k));
  for (std::size_t a = 0; a < axes; ++a)
    if (f[1 + a] != grid.labels(a)[grid.position(c, a)])
      throw Error(where + ": cell " + f[0] + " has " + grid.names()[a] + " " + f[1 + a] + ", this run's grid " +
                  grid.labels(a)[grid.position(c, a)] + " (were the shards run with other flags?)");
  seen[c] = true;
  const std::string& name = f[axes + 1];
  if (name.empty()) return;
  if (records[c].has(name)) throw Error(where + ": cell " + f[0] + " has " + name + " twice");
  std::vector<double> values;
  for (const std::string& text : split(f[axes + 2], ' ')) {
    char* end = nullptr;
    values.push_back(std::strtod(text.c_str(), &end));
    if (text.empty() || *end != '\0') throw Error(where + ": '" + text + "' is not a number");
  }
  check_value_range(name, values, where + ": cell " + f[0]);
  records[c].set(name, std::move(values));
}

}  // namespace

std::vector<Record> read_shards(const std::vector<std::string>& dirs, const Grid& grid, const std::string& program,
                                const std::string& flags) {
  namespace fs = std::filesystem;
  std::vector<Record> records(grid.size());
  std::vector<bool> seen(grid.size(), false);
  std::vector<std::string> shard_of;  // shard_of[k - 1]: the directory that held shard k
  for (const std::string& dir : dirs) {
    const std::string meta = nn::read_file(fs::path(dir) / "shard.txt");
    const Shard s = check_shard(dir, meta, program, flags, shard_of);
    const std::string cells_text = nn::read_file(fs::path(dir) / "cells.csv");
    if (const std::string sum = nn::sha256_hex(cells_text), said = shard_field(meta, "cells_sha256", dir); sum != said)
      throw Error("--merge " + dir + ": cells.csv has SHA-256 " + sum + ", shard.txt says " + said +
                  " (the file was changed or corrupted after the shard wrote it)");
    std::istringstream csv(cells_text);
    std::string line;
    std::getline(csv, line);  // the header
    for (std::size_t row = 2; std::getline(csv, line); ++row)
      read_row(split(line, ','), "--merge " + dir + ": cells.csv row " + std::to_string(row), grid, s, records, seen);
  }
  for (std::size_t k = 0; k < shard_of.size(); ++k)
    if (shard_of[k].empty()) throw Error("--merge: shard " + std::to_string(k + 1) + " of " + std::to_string(shard_of.size()) + " is missing");
  for (std::size_t c = 0; c < grid.size(); ++c) {
    if (!seen[c]) throw Error("--merge: no shard measured cell " + std::to_string(c) + " (" + grid.describe(c) + ")");
    const Shard whose{c % shard_of.size() + 1, shard_of.size()};
    records[c].set_origin("--merge " + shard_of[whose.k - 1] + ": cell " + std::to_string(c) + " (" + grid.describe(c) + ")");
    check_blow_up(records[c], "--merge " + shard_of[whose.k - 1] + ": cell " + std::to_string(c));
  }
  return records;
}

// ---- the threads ----

void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr error;
  auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        next = n;  // the others stop after their current index
      }
    }
  };
  std::vector<std::thread> threads;
  try {
    for (unsigned j = 1; j < std::min<std::size_t>(std::max(1u, jobs), n); ++j) threads.emplace_back(worker);
  } catch (const std::system_error&) {  // no more threads to be had: the ones started do the work
  }
  worker();
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace gs::experiments
