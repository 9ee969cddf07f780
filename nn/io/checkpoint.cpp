#include "nn/io/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/error.hpp"
#include "nn/io/config_json.hpp"
#include "nn/io/directory_write.hpp"
#include "nn/io/npy.hpp"

namespace gs::nn {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

constexpr const char* format_name = "gradscope checkpoint";
constexpr std::size_t config_limit = std::size_t{64} << 20;  // 64 MiB

std::string npy_name(const std::string& parameter) { return parameter + ".npy"; }
std::string slot_file(const std::string& slot, const std::string& parameter) {
  return "optimizer/" + slot + "/" + npy_name(parameter);
}

// The "train" record must read back: an object, with finite numbers (nlohmann would write NaN as
// null), nested no deeper than the readers accept.
void check_record(const json& value, std::size_t depth) {
  if (depth > json_max_depth) throw Error("checkpoint: the \"train\" record is nested deeper than " +
                                          std::to_string(json_max_depth) + " levels");
  if (value.is_number_float() && !std::isfinite(value.get<double>()))
    throw Error("checkpoint: the \"train\" record holds a number that is not finite (" + value.dump() + ")");
  if (value.is_structured())
    for (const json& element : value) check_record(element, depth + 1);
}

// A rethrow with "checkpoint: " in front, unless the message has it already.
[[noreturn]] void rethrow_as_checkpoint_error(const Error& e) {
  const std::string what = e.what();
  throw Error(what.rfind("checkpoint: ", 0) == 0 ? what : "checkpoint: " + what);
}

}  // namespace

// ---- saving ----

void save_checkpoint(const fs::path& dir, std::string_view program, const Module& model, const ModelConfig& config,
                     std::size_t step, const Optimizer* optimizer, const json* train) {
  const std::vector<NamedParameter> params = model.named_parameters();
  ordered_json doc = {{"format", format_name}, {"format_version", checkpoint_format_version}};
  const ordered_json model_fields = model_config_json(config);  // a named value: items() refers into it
  for (const auto& [key, value] : model_fields.items()) doc[key] = value;
  doc["step"] = step;
  if (optimizer) {
    doc["optimizer"] = optimizer->name();
    doc["optimizer_steps"] = optimizer->steps();
    doc["optimizer_slots"] = optimizer->slot_names();
    ordered_json& h = doc["optimizer_hyperparameters"] = ordered_json::object();
    for (const auto& [name, value] : optimizer->hyperparameters()) {
      if (!std::isfinite(value)) throw Error("checkpoint: optimizer hyperparameter " + name + " is not finite");
      h[name] = value;
    }
  }
  if (train) {
    if (!train->is_object()) throw Error("checkpoint: the \"train\" record is not a JSON object");
    check_record(*train, 1);
    doc["train"] = ordered_json(*train);
  }
  ordered_json& shapes = doc["parameters"] = ordered_json::object();
  for (const NamedParameter& p : params) shapes[p.name] = p.parameter.shape();
  std::string text;
  try {
    text = doc.dump(2) + "\n";
  } catch (const json::exception& e) {  // a string that is not UTF-8
    throw Error("checkpoint: cannot write " + (dir / "config.json").string() + ": " + e.what());
  }

  auto require_finite = [&](const Array& a, const std::string& what) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!std::isfinite(a.data()[i]))
        throw Error("checkpoint: not saving " + dir.string() + ": " + what + " holds " +
                    (std::isnan(a.data()[i]) ? "NaN" : "Inf") + " at element " + std::to_string(i));
  };
  for (std::size_t i = 0; i < params.size(); ++i) {
    require_finite(params[i].parameter.value(), "parameter '" + params[i].name + "'");
    if (optimizer)
      for (std::size_t s = 0; s < optimizer->slot_names().size(); ++s)
        require_finite(optimizer->slot(s, i), "parameter '" + params[i].name + "' (optimizer " + optimizer->slot_names()[s] + ")");
  }
  try {
    write_directory_atomically(dir, {std::string(program), "checkpoint"}, [&](DirectoryWriter& out) {
      for (const NamedParameter& p : params) out.write(npy_name(p.name), npy_bytes(p.parameter.value()));
      if (optimizer)
        for (std::size_t s = 0; s < optimizer->slot_names().size(); ++s)
          for (std::size_t i = 0; i < params.size(); ++i)
            out.write(slot_file(optimizer->slot_names()[s], params[i].name), npy_bytes(optimizer->slot(s, i)));
      out.write("config.json", text);
    });
  } catch (const Error& e) {
    rethrow_as_checkpoint_error(e);
  }
}

// ---- reading config.json ----

JsonField CheckpointInfo::train() const {
  static const json empty = json::object();
  const std::string file = (dir / "config.json").string();
  if (!document || !document->contains("train")) return JsonField(empty, file, "train");
  return JsonField(document->at("train"), file, "train");
}

namespace {

CheckpointInfo read_info(const fs::path& dir) {
  CheckpointInfo info;
  info.dir = dir;
  auto files = std::make_shared<const VerifiedDirectory>(dir, "checkpoint");
  const std::string file = (dir / "config.json").string();
  auto document = std::make_shared<const json>(parse_json(files->read("config.json", config_limit), file));
  const JsonField root(*document, file);
  if (!root.is_object()) root.fail("is not a JSON object");
  if (root.at("format").as_string() != format_name) root.at("format").fail("is not \"" + std::string(format_name) + "\"");
  if (const std::size_t v = root.at("format_version").as_size(); v != checkpoint_format_version)
    root.at("format_version").fail("is " + std::to_string(v) + "; this gradscope reads version " +
                                   std::to_string(checkpoint_format_version));
  info.config = model_config_from_json(root);
  info.step = root.at("step").as_size();
  info.program = files->manifest().tag.program;

  std::set<std::string> expected = {"config.json"};
  const JsonField shapes = root.at("parameters");
  for (const std::string& name : shapes.keys()) {
    const JsonField dims = shapes.at(name);
    Shape shape;
    for (std::size_t d = 0; d < dims.size(); ++d) shape.push_back(dims.at(d).as_size(std::size_t{1} << 40));
    info.parameters.push_back({name, shape});
    expected.insert(npy_name(name));
  }
  if (root.has("optimizer")) {
    info.optimizer = root.at("optimizer").as_string();
    info.optimizer_steps = root.at("optimizer_steps").as_size();
    const JsonField slots = root.at("optimizer_slots");
    for (std::size_t s = 0; s < slots.size(); ++s) {
      const std::string& slot = slots.at(s).as_string();
      if (slot.empty() || slot.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
        slots.at(s).fail("is not a slot name (lowercase letters, digits, _)");
      info.optimizer_slots.push_back(slot);
      for (const auto& [name, shape] : info.parameters) expected.insert(slot_file(slot, name));
    }
    const JsonField h = root.at("optimizer_hyperparameters");
    for (const std::string& name : h.keys()) info.optimizer_hyperparameters.push_back({name, h.at(name).as_double()});
  }
  if (root.has("train") && !root.at("train").is_object()) root.at("train").fail("is not a JSON object");

  // The manifest lists exactly the files config.json implies, and the directory holds nothing else.
  for (const std::string& name : expected)
    if (!files->lists(name))
      throw Error((dir / name).string() + " is missing from the manifest " + (dir / manifest_name).string());
  for (const auto& [name, sha] : files->manifest().files)
    if (!expected.count(name))
      throw Error((dir / name).string() + " is listed in the manifest, but " + file + " implies no such file");
  files->refuse_unlisted_files();

  info.document = std::move(document);
  info.files = std::move(files);
  return info;
}

}  // namespace

CheckpointInfo read_checkpoint_info(const fs::path& dir) {
  try {
    return read_info(dir);
  } catch (const Error& e) {
    rethrow_as_checkpoint_error(e);
  }
}

// ---- loading ----

namespace {

// A .npy of the checkpoint, verified against the manifest, refused unless it has the expected shape.
Array read_array(const VerifiedDirectory& files, const std::string& name, const std::string& what, const Shape& expected) {
  const std::string path = (files.dir() / name).string();
  Array value;
  try {
    std::size_t bytes = sizeof(double);
    for (std::size_t d : expected) bytes *= d;
    value = parse_npy_f8(files.read(name, bytes + 65536), path);
  } catch (const Error& e) {
    throw Error("checkpoint: " + what + ": " + e.what());
  }
  if (shape_of(value) != expected)
    throw Error("checkpoint: " + what + " in " + path + " has shape " + shape_str(shape_of(value)) +
                ", the model expects " + shape_str(expected));
  // A NaN or Inf weight or moment is never a state to continue from (a run that diverged saved it).
  for (std::size_t i = 0; i < value.size(); ++i)
    if (!std::isfinite(value.data()[i]))
      throw Error("checkpoint: " + what + " in " + path + " holds " + (std::isnan(value.data()[i]) ? "NaN" : "Inf") +
                  " at element " + std::to_string(i) + " of " + std::to_string(value.size()) +
                  "; a checkpoint holds finite numbers only");
  return value;
}

std::string hyperparameter_list(const std::vector<std::pair<std::string, double>>& h) {
  std::string s;
  for (const auto& [name, value] : h) s += (s.empty() ? "" : ", ") + name + " " + json(value).dump();
  return s;
}

}  // namespace

void load_checkpoint(const CheckpointInfo& info, Module& model, const ModelConfig& config, Optimizer* optimizer) {
  if (!info.files || !info.document) throw Error("checkpoint: load_checkpoint needs the info read_checkpoint_info returns");
  const std::string config_file = (info.dir / "config.json").string();
  if (const std::string d = architecture_difference(info.config, config); !d.empty())
    throw Error("checkpoint: " + config_file + " describes another model: " + d + " (checkpoint, model)");

  // Check every name and shape first, then read every file; change the model only once all is good.
  std::vector<NamedParameter> params = model.named_parameters();
  const std::map<std::string, Shape> saved(info.parameters.begin(), info.parameters.end());
  std::set<std::string> names;
  for (const NamedParameter& p : params) {
    names.insert(p.name);
    const auto it = saved.find(p.name);
    if (it == saved.end())
      throw Error("checkpoint: parameter '" + p.name + "' is missing: " + config_file + " lists no such parameter (no file " +
                  (info.dir / npy_name(p.name)).string() + ")");
    if (it->second != p.parameter.shape())
      throw Error("checkpoint: parameter '" + p.name + "' in " + config_file + " has shape " + shape_str(it->second) +
                  ", the model expects " + shape_str(p.parameter.shape()));
  }
  for (const auto& [name, shape] : info.parameters)
    if (!names.count(name))
      throw Error("checkpoint: " + (info.dir / npy_name(name)).string() + " holds a parameter '" + name +
                  "' that the model does not have");

  if (optimizer) {
    if (info.optimizer.empty()) throw Error("checkpoint: " + config_file + " has no optimizer state to resume from");
    if (info.optimizer != optimizer->name())
      throw Error("checkpoint: " + config_file + " holds the state of optimizer '" + info.optimizer + "', not of '" +
                  optimizer->name() + "'");
    if (info.optimizer_slots != optimizer->slot_names())
      throw Error("checkpoint: " + config_file + " holds other optimizer slots than " + optimizer->name() + " has");
    std::vector<std::pair<std::string, double>> mine = optimizer->hyperparameters();
    std::sort(mine.begin(), mine.end());
    std::vector<std::pair<std::string, double>> theirs = info.optimizer_hyperparameters;
    std::sort(theirs.begin(), theirs.end());
    if (mine != theirs)
      throw Error("checkpoint: " + config_file + " was saved by " + info.optimizer + " with " +
                  hyperparameter_list(theirs) + "; this optimizer has " + hyperparameter_list(mine));
  }

  std::vector<Array> values;
  for (const NamedParameter& p : params)
    values.push_back(read_array(*info.files, npy_name(p.name), "parameter '" + p.name + "'", p.parameter.shape()));
  std::vector<std::vector<Array>> slots;
  if (optimizer)
    for (const std::string& slot : optimizer->slot_names()) {
      slots.emplace_back();
      for (const NamedParameter& p : params)
        slots.back().push_back(read_array(*info.files, slot_file(slot, p.name),
                                          "parameter '" + p.name + "' (optimizer " + slot + ")", p.parameter.shape()));
    }

  for (std::size_t i = 0; i < params.size(); ++i) params[i].parameter.value() = values[i];
  if (optimizer) {
    for (std::size_t s = 0; s < slots.size(); ++s)
      for (std::size_t i = 0; i < params.size(); ++i) optimizer->slot(s, i) = slots[s][i];
    optimizer->set_steps(info.optimizer_steps);
  }
}

CheckpointInfo load_checkpoint(const fs::path& dir, Module& model, const ModelConfig& config, Optimizer* optimizer) {
  CheckpointInfo info = read_checkpoint_info(dir);
  load_checkpoint(info, model, config, optimizer);
  return info;
}

}  // namespace gs::nn
