#include "nn/io/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/error.hpp"
#include "engine/tape.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/directory_write.hpp"
#include "nn/io/json.hpp"
#include "nn/io/npy.hpp"

namespace gs::nn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* format_name = "gradscope checkpoint";

std::string slot_file(const std::string& slot, const std::string& parameter) { return "optimizer/" + slot + "/" + parameter + ".npy"; }

// "" if every element is finite, else "NaN at element 3" (a diverged run is never a state to continue from).
std::string non_finite(const Array& a) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!std::isfinite(a.data()[i])) return (std::isnan(a.data()[i]) ? "NaN" : "Inf") + std::string(" at element ") + std::to_string(i);
  return "";
}

// A "train" record must read back: no NaN or Inf (nlohmann would write null).
void check_finite(const json& value) {
  if (value.is_number_float() && !std::isfinite(value.get<double>()))
    throw Error("the \"train\" record holds a number that is not finite (" + value.dump() + ")");
  for (const json& element : value.is_structured() ? value : json::array()) check_finite(element);
}

std::string config_text(const std::vector<NamedParameter>& params, const ModelConfig& config, std::size_t step,
                        const Optimizer* optimizer, const json* train) {
  nlohmann::ordered_json doc = {
      {"format", format_name}, {"format_version", checkpoint_format_version}, {"precision", precision_name}};
  doc.update(model_config_json(config));
  doc["step"] = step;
  if (optimizer) {
    doc["optimizer"] = optimizer->name();
    doc["optimizer_steps"] = optimizer->steps();
    doc["optimizer_slots"] = optimizer->slot_names();
    doc["optimizer_hyperparameters"] = nlohmann::ordered_json::object();
    for (const auto& [name, value] : optimizer->hyperparameters()) {
      if (!std::isfinite(value)) throw Error("optimizer hyperparameter " + name + " is not finite");
      doc["optimizer_hyperparameters"][name] = value;
    }
  }
  if (train) {
    if (!train->is_object()) throw Error("the \"train\" record is not a JSON object");
    check_finite(*train);
    doc["train"] = nlohmann::ordered_json(*train);
  }
  doc["parameters"] = nlohmann::ordered_json::object();
  for (const NamedParameter& p : params) doc["parameters"][p.name] = p.parameter.shape();
  return doc.dump(2) + "\n";  // throws on a string that is not UTF-8
}

// config.json's members; a member missing or of another type is nlohmann's error, caught by the caller.
void read_config(CheckpointInfo& info, const json& doc, const std::string& file) {
  if (doc.at("format") != format_name) throw Error(file + ": format is not \"" + std::string(format_name) + "\"");
  if (const std::size_t v = json_count(doc.at("format_version"), "format_version", 0, 1 << 30, file); v != checkpoint_format_version)
    throw Error(file + ": format_version is " + std::to_string(v) + "; this gradscope reads version " +
                std::to_string(checkpoint_format_version));
  // The arrays are in the writer's precision (a checkpoint without the member is float64's).
  if (const std::string p = doc.value("precision", "f64"); p != precision_name)
    throw Error(file + ": the checkpoint's arrays are " + p + ", this build's are " + precision_name +
                " (read it with a build configured -DGRADSCOPE_PRECISION=" + p + ")");
  info.config = model_config_from_json(doc, file);
  info.step = json_count(doc.at("step"), "step", 0, SIZE_MAX, file);
  if (!info.train().is_object()) throw Error(file + ": train is not a JSON object");
  for (const auto& [name, dims] : doc.at("parameters").items()) {
    Shape& shape = info.parameters.emplace_back(name, Shape{}).second;
    for (const json& d : dims.get<std::vector<json>>())
      shape.push_back(json_count(d, "a dimension of parameters." + name, 0, std::size_t{1} << 40, file));
  }
  if (!doc.contains("optimizer")) return;
  info.optimizer = doc.at("optimizer").get<std::string>();
  info.optimizer_steps = json_count(doc.at("optimizer_steps"), "optimizer_steps", 0, SIZE_MAX, file);
  info.optimizer_slots = doc.at("optimizer_slots").get<std::vector<std::string>>();
  const auto h = doc.at("optimizer_hyperparameters").get<std::map<std::string, double>>();
  info.optimizer_hyperparameters.assign(h.begin(), h.end());
}

CheckpointInfo read_info(const fs::path& dir) {
  CheckpointInfo info;
  info.dir = dir;
  info.files = std::make_shared<const VerifiedDirectory>(dir, "checkpoint");
  info.program = info.files->manifest().tag.program;
  const std::string file = (dir / "config.json").string();
  info.document = std::make_shared<const json>(parse_json(info.files->read("config.json", std::size_t{64} << 20), file));
  try {
    read_config(info, *info.document, file);
  } catch (const json::exception& e) {
    throw Error(json_error(file, e));
  }
  std::set<std::string> implied = {"config.json"};  // the files config.json implies: exactly the listed ones
  for (const auto& [name, shape] : info.parameters) {
    implied.insert(name + ".npy");
    for (const std::string& slot : info.optimizer_slots) implied.insert(slot_file(slot, name));
  }
  for (const std::string& name : implied)
    if (!info.files->manifest().files.count(name))
      throw Error((dir / name).string() + " is missing from the manifest " + (dir / manifest_name).string());
  for (const auto& [name, sha] : info.files->manifest().files)
    if (!implied.count(name)) throw Error((dir / name).string() + " is listed in the manifest, but " + file + " implies no such file");
  info.files->refuse_unlisted_files();
  return info;
}

std::string listed(std::vector<std::pair<std::string, double>> h) {
  std::sort(h.begin(), h.end());
  std::string s;
  for (const auto& [name, value] : h) s += (s.empty() ? "" : ", ") + name + " " + json(value).dump();
  return s;
}

// Every check before anything is read into the model: the architecture, each parameter's name and
// shape, the optimizer's kind, slots and hyperparameters.
void check_fits(const CheckpointInfo& info, const std::vector<NamedParameter>& params, const ModelConfig& config,
                const Optimizer* optimizer) {
  const std::string file = (info.dir / "config.json").string();
  if (const std::string d = architecture_difference(info.config, config); !d.empty())
    throw Error(file + " describes another model: " + d + " (checkpoint, model)");
  std::map<std::string, Shape> saved(info.parameters.begin(), info.parameters.end());
  for (const NamedParameter& p : params) {
    const auto it = saved.find(p.name);
    if (it == saved.end())
      throw Error("parameter '" + p.name + "' is missing: " + file + " lists no such parameter (no file " +
                  (info.dir / (p.name + ".npy")).string() + ")");
    if (it->second != p.parameter.shape())
      throw Error("parameter '" + p.name + "' in " + file + " has shape " + shape_str(it->second) + ", the model expects " +
                  shape_str(p.parameter.shape()));
    saved.erase(it);
  }
  if (!saved.empty())
    throw Error((info.dir / (saved.begin()->first + ".npy")).string() + " holds a parameter '" + saved.begin()->first +
                "' that the model does not have");
  if (!optimizer) return;
  if (info.optimizer.empty()) throw Error(file + " has no optimizer state to resume from");
  if (info.optimizer != optimizer->name())
    throw Error(file + " holds the state of optimizer '" + info.optimizer + "', not of '" + optimizer->name() + "'");
  if (info.optimizer_slots != optimizer->slot_names()) throw Error(file + " holds other optimizer slots than " + optimizer->name() + " has");
  if (listed(optimizer->hyperparameters()) != listed(info.optimizer_hyperparameters))
    throw Error(file + " was saved by " + info.optimizer + " with " + listed(info.optimizer_hyperparameters) +
                "; this optimizer has " + listed(optimizer->hyperparameters()));
}

// Every gs::Error of f leaves with the prefix "checkpoint: ".
template <class F>
auto prefixed(F f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error("checkpoint: " + std::string(e.what()));
  }
}

}  // namespace

void save_checkpoint(const fs::path& dir, std::string_view program, const Module& model, const ModelConfig& config,
                     std::size_t step, const Optimizer* optimizer, const json* train) {
  const std::vector<NamedParameter> params = model.named_parameters();
  const std::vector<std::string> slots = optimizer ? optimizer->slot_names() : std::vector<std::string>{};
  prefixed([&] {
    std::string text;
    try {
      text = config_text(params, config, step, optimizer, train);
    } catch (const json::exception& e) {
      throw Error(json_error("cannot write " + (dir / "config.json").string(), e));
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      std::string bad = non_finite(params[i].parameter.value()), where;
      for (std::size_t s = 0; s < slots.size() && bad.empty(); ++s)
        if (!(bad = non_finite(optimizer->slot(s, i))).empty()) where = "(optimizer " + slots[s] + ") ";
      if (!bad.empty()) throw Error("not saving " + dir.string() + ": parameter '" + params[i].name + "' " + where + "holds " + bad);
    }
    write_directory_atomically(dir, {std::string(program), "checkpoint"}, [&](DirectoryWriter& out) {
      for (const NamedParameter& p : params) out.write(p.name + ".npy", npy_bytes(p.parameter.value()));
      for (std::size_t s = 0; s < slots.size(); ++s)
        for (std::size_t i = 0; i < params.size(); ++i) out.write(slot_file(slots[s], params[i].name), npy_bytes(optimizer->slot(s, i)));
      out.write("config.json", text);
    });
  });
}

const json& CheckpointInfo::train() const {
  static const json empty = json::object();
  return document && document->contains("train") ? document->at("train") : empty;
}

CheckpointInfo read_checkpoint_info(const fs::path& dir) {
  return prefixed([&] { return read_info(dir); });
}

void load_checkpoint(const CheckpointInfo& info, Module& model, const ModelConfig& config, Optimizer* optimizer) {
  if (!info.files || !info.document) throw Error("checkpoint: load_checkpoint needs the info read_checkpoint_info returns");
  std::vector<NamedParameter> params = model.named_parameters();
  prefixed([&] {
    check_fits(info, params, config, optimizer);
    // Every file is read before the model changes: a refusal leaves it as it was.
    const std::vector<std::string> slots = optimizer ? optimizer->slot_names() : std::vector<std::string>{};
    std::vector<Array> values;  // the parameters', then each slot's
    const auto read = [&](const std::string& name, const NamedParameter& p, const std::string& what) {
      try {
        const std::string path = (info.dir / name).string();
        values.push_back(parse_npy_real(info.files->read(name, default_read_limit), path, p.parameter.shape()));
        if (const std::string bad = non_finite(values.back()); !bad.empty())  // behind a hand-resealed manifest
          throw Error(path + " holds " + bad + " of " + std::to_string(values.back().size()) + "; a checkpoint holds finite numbers only");
      } catch (const Error& e) {
        throw Error("parameter '" + p.name + "'" + what + ": " + e.what());
      }
    };
    for (const NamedParameter& p : params) read(p.name + ".npy", p, "");
    for (const std::string& slot : slots)
      for (const NamedParameter& p : params) read(slot_file(slot, p.name), p, " (optimizer " + slot + ")");
    const std::size_t n = params.size();
    for (std::size_t i = 0; i < n; ++i) params[i].parameter.value() = values[i];
    for (std::size_t s = 0; s < slots.size(); ++s)
      for (std::size_t i = 0; i < n; ++i) optimizer->slot(s, i) = values[(s + 1) * n + i];
    if (optimizer) optimizer->set_steps(info.optimizer_steps);
  });
}

CheckpointInfo load_checkpoint(const fs::path& dir, Module& model, const ModelConfig& config, Optimizer* optimizer) {
  CheckpointInfo info = read_checkpoint_info(dir);
  load_checkpoint(info, model, config, optimizer);
  return info;
}

double write_dump(const fs::path& dir, std::string_view program, const ModelConfig& config, Module& model, const Batch& batch,
                  const BatchLoss& loss, const std::vector<std::pair<std::string, Array>>& extra) {
  Tape& tape = Tape::current();
  tape.reset();
  model.zero_grad();
  const Var l = loss(batch.inputs, batch.targets);
  const double value = l.value()();
  l.backward();
  nlohmann::ordered_json doc = {{"format", "gradscope dump"}};
  doc.update(model_config_json(config));
  write_directory_atomically(dir, {std::string(program), "dump"}, [&](DirectoryWriter& out) {
    out.write("config.json", doc.dump(2) + "\n");
    for (const NamedParameter& p : model.named_parameters()) {
      out.write("params/" + p.name + ".npy", npy_bytes(p.parameter.value()));
      out.write("grads/" + p.name + ".npy", npy_bytes(p.parameter.grad()));
    }
    out.write("batch/inputs.npy", npy_bytes(batch.inputs));
    out.write("batch/targets.npy", npy_bytes(batch.targets));
    out.write("loss.npy", npy_bytes(Array{value}));
    for (const auto& [name, array] : extra) out.write(name + ".npy", npy_bytes(array));
  });
  tape.reset();
  return value;
}

}  // namespace gs::nn
