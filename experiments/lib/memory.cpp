#include "experiments/lib/memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "engine/tools/inspect.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::experiments {
namespace {

// What one proxy pass counted, in real elements (doubles).
struct Counted {
  double parameters = 0.0, tape = 0.0, entries = 0.0;
  bool exact = true;
};

// One forward pass of the proxy with `layers` blocks, and what its backward pass would add; every
// dimension of every array on its tape is mapped to the real size it stands for.
Counted count(const nn::ModelConfig& config, std::size_t batch, std::size_t layers, bool keep_contributions) {
  nn::ModelConfig proxy = config;  // the same placement and init, every size small and distinct
  proxy.vocab = 13;
  proxy.context = 5;
  proxy.d_model = 21;
  proxy.heads = 3;
  proxy.d_ff = 11;
  proxy.layers = layers;
  // mixln's K Post-LN blocks: at most the proxy's blocks (a Post-LN and a Pre-LN block hold the same arrays)
  if (config.mixln_post) proxy.mixln_post = std::min(*config.mixln_post, layers);
  const double C = static_cast<double>(config.d_model), H = static_cast<double>(config.heads);
  const std::map<std::size_t, double> real = {{1, 1.0},
                                              {2, static_cast<double>(batch)},
                                              {5, static_cast<double>(config.context)},
                                              {3, H},
                                              {7, C / H},
                                              {21, C},
                                              {11, static_cast<double>(config.ff())},
                                              {13, static_cast<double>(config.vocab)}};
  double largest = 0.0;
  for (const auto& [proxy_size, size] : real) largest = std::max(largest, size);
  Counted n;
  auto elements = [&](const Shape& shape) {
    double e = 1.0;
    for (std::size_t d : shape) {
      const auto it = real.find(d);
      n.exact = n.exact && it != real.end();
      e *= it != real.end() ? it->second : largest;  // an unknown dimension: counted as the largest
    }
    return e;
  };

  nn::TransformerLM model(proxy);
  for (const nn::NamedParameter& p : model.named_parameters()) n.parameters += elements(p.parameter.shape());
  Tape tape;
  TapeScope scope(tape);
  const IndexArray ids = xt::zeros<std::int64_t>({std::size_t{2}, proxy.context});
  const Var loss = model.loss(ids, ids);
  // The forward pass only: what backward() would add is known from the tape without running it (so a
  // breakpoint on a backward function, e.g. gs::nn::layernorm_backward, never stops in this proxy). As
  // Tape::backward does: an entry on a path from the loss gets a gradient of its value's shape, and each
  // of its inputs that requires a gradient gets one contribution of the input's shape.
  n.entries = static_cast<double>(tape.size());
  std::vector<bool> on_path(tape.size(), false);
  on_path[static_cast<std::size_t>(loss.index())] = true;
  for (int i = static_cast<int>(tape.size()) - 1; i >= 0; --i) {
    const Entry& e = tape.entry(i);
    n.tape += elements(shape_of(e.value));
    if (!on_path[static_cast<std::size_t>(i)]) continue;
    n.tape += elements(shape_of(e.value));  // its gradient
    if (!e.backward) continue;
    for (int in : e.inputs) {
      const Entry& input = tape.entry(in);
      if (!input.requires_grad) continue;
      on_path[static_cast<std::size_t>(in)] = true;
      if (keep_contributions) n.tape += elements(shape_of(input.value));
    }
  }
  return n;
}

}  // namespace

Footprint footprint(const nn::ModelConfig& config, std::size_t batch, std::size_t optimizer_slots,
                    bool keep_contributions) {
  const Counted one = count(config, batch, 1, keep_contributions), two = count(config, batch, 2, keep_contributions);
  const double blocks = static_cast<double>(config.layers) - 1.0;  // each block after the first costs two - one
  Footprint f;
  f.parameters = one.parameters + blocks * (two.parameters - one.parameters);
  f.model = 8.0 * f.parameters * (2.0 + static_cast<double>(optimizer_slots));  // values, gradients, slots
  f.tape = 8.0 * (one.tape + blocks * (two.tape - one.tape));
  f.exact = one.exact && two.exact;
  f.entries = one.entries + blocks * (two.entries - one.entries);
  return f;
}

namespace {

// The number after `key` in a "Key: value" file such as /proc/meminfo (in kB there), or -1.
double field(const char* file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)  // lines such as "Name:\ttrain" hold no number
    if (line.rfind(key, 0) == 0) {
      std::istringstream rest(line.substr(key.size()));
      double value = 0.0;
      return rest >> value ? value : -1.0;
    }
  return -1.0;
}

// The first number in a one-line file such as the cgroup's memory.max ("max" there: no limit), or -1.
double number_in(const std::string& file) {
  std::ifstream in(file);
  double value = -1.0;
  return in >> value ? value : -1.0;
}

// The process's cgroup (v2) directory, from /proc/self/cgroup's "0::/PATH" line; "" if none.
std::string cgroup_dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  return "";
}

// What remains of the resource limit `which` (RLIMIT_AS, RLIMIT_DATA) beyond `used_kb` already in use.
double rlimit_left(int which, double used_kb) {
  struct rlimit limit {};
  if (::getrlimit(which, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::numeric_limits<double>::infinity();
  return std::max(0.0, static_cast<double>(limit.rlim_cur) - std::max(0.0, used_kb) * 1024.0);
}

}  // namespace

AvailableMemory available_memory() {
  const double inf = std::numeric_limits<double>::infinity();
  AvailableMemory a{inf, "no limit could be read"};
  auto consider = [&a](double bytes, const char* source) {
    if (bytes >= 0.0 && bytes < a.bytes) a = {bytes, source};
  };
  const double meminfo_kb = field("/proc/meminfo", "MemAvailable:");
  if (meminfo_kb >= 0.0) consider(meminfo_kb * 1024.0, "MemAvailable in /proc/meminfo");
  consider(rlimit_left(RLIMIT_AS, field("/proc/self/status", "VmSize:")), "the address-space limit RLIMIT_AS (ulimit -v)");
  consider(rlimit_left(RLIMIT_DATA, field("/proc/self/status", "VmData:")), "the data limit RLIMIT_DATA (ulimit -d)");
  if (const std::string dir = cgroup_dir(); !dir.empty()) {
    const double max = number_in(dir + "/memory.max"), current = number_in(dir + "/memory.current");
    if (max >= 0.0 && current >= 0.0) consider(std::max(0.0, max - current), "the cgroup's memory.max");
  }
  return a;
}

std::string bytes_text(double bytes) {
  char buf[32];
  if (bytes >= 1e12)
    std::snprintf(buf, sizeof buf, "%.3g TB", bytes / 1e12);
  else if (bytes >= 1e9)
    std::snprintf(buf, sizeof buf, "%.3g GB", bytes / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.3g MB", bytes / 1e6);
  return buf;
}

void check_fits(const Footprint& one, std::size_t concurrent, double data, const std::string& flags) {
  const double need = static_cast<double>(concurrent) * one.total() + data;
  const AvailableMemory have = available_memory();
  if (need <= have.bytes) return;
  char params[32];
  std::snprintf(params, sizeof params, "%.3g", one.parameters);
  throw Error("this run needs about " + bytes_text(need) + " of memory, more than the " + bytes_text(have.bytes) +
              " available (" + have.source + "): " + std::to_string(concurrent) + " model(s) at once of " +
              params + " parameters (" + bytes_text(one.model) + " each with their gradients and optimizer state), " +
              "one step's tape " + bytes_text(one.tape) + " each, data " + bytes_text(data) + "; set by " + flags);
}

void check_bytes(double bytes, const std::string& what, const std::string& flags) {
  const AvailableMemory have = available_memory();
  if (bytes <= have.bytes) return;
  throw Error("this run needs about " + bytes_text(bytes) + " of memory for " + what + ", more than the " +
              bytes_text(have.bytes) + " available (" + have.source + "); set by " + flags);
}

}  // namespace gs::experiments
