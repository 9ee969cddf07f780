#include "nn/io/checkpoint.hpp"

#include <map>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/config_json.hpp"
#include "nn/io/json.hpp"
#include "nn/io/npy.hpp"

namespace gs::nn {

namespace fs = std::filesystem;

namespace {

std::string shape_json(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// A parameter's value from its file, refused unless it has the model's shape.
Array read_parameter(const fs::path& file, const std::string& name, const Shape& expected) {
  if (!fs::exists(file))
    throw Error("checkpoint: parameter '" + name + "' is missing: there is no file " + file.string());
  Array value;
  try {
    value = read_npy_f8(file);
  } catch (const Error& e) {
    throw Error("checkpoint: parameter '" + name + "': " + e.what());
  }
  if (shape_of(value) != expected)
    throw Error("checkpoint: parameter '" + name + "' in " + file.string() + " has shape " +
                shape_str(shape_of(value)) + ", the model expects " + shape_str(expected));
  return value;
}

}  // namespace

void save_checkpoint(const fs::path& dir, const Module& model, const ModelConfig& config, std::size_t step,
                     const Optimizer* optimizer, const JsonMembers& train) {
  if (fs::exists(dir) && !fs::exists(dir / "config.json") && !fs::is_empty(dir))
    throw Error("checkpoint: " + dir.string() + " exists and is not a checkpoint (no config.json); not replacing it");
  const std::vector<NamedParameter> params = model.named_parameters();

  JsonMembers members = model_config_members(config);
  members.push_back({"step", std::to_string(step)});
  if (optimizer) {
    std::string slots = "[";
    for (std::size_t s = 0; s < optimizer->slot_names().size(); ++s)
      slots += (s ? ", " : "") + json_quote(optimizer->slot_names()[s]);
    members.push_back({"optimizer", json_quote(optimizer->name())});
    members.push_back({"optimizer_steps", std::to_string(optimizer->steps())});
    members.push_back({"optimizer_slots", slots + "]"});
  }
  if (!train.empty()) members.push_back({"train", json_object(train, 2)});
  JsonMembers shapes;
  for (const NamedParameter& p : params) shapes.push_back({p.name, shape_json(p.parameter.shape())});
  members.push_back({"parameters", json_object(shapes, 2)});

  write_directory_atomically(dir, [&](const fs::path& tmp) {
    for (const NamedParameter& p : params) write_npy(tmp / (p.name + ".npy"), p.parameter.value());
    if (optimizer) {
      for (std::size_t s = 0; s < optimizer->slot_names().size(); ++s) {
        const fs::path slot_dir = tmp / "optimizer" / optimizer->slot_names()[s];
        fs::create_directories(slot_dir);
        for (std::size_t i = 0; i < params.size(); ++i)
          write_npy(slot_dir / (params[i].name + ".npy"), optimizer->slot(s, i));
      }
    }
    write_file_atomically(tmp / "config.json", json_object(members) + "\n");
  });
}

CheckpointInfo read_checkpoint_info(const fs::path& dir) {
  const fs::path file = dir / "config.json";
  if (!fs::exists(file)) throw Error("checkpoint: " + dir.string() + " is not a checkpoint: no file " + file.string());
  const Json json = parse_json(read_file(file), file.string());
  CheckpointInfo info;
  info.config = model_config_from_json(json, file.string());
  info.step = json.at("step", file.string()).as_size("step", file.string());
  if (json.has("train")) info.train = json.at("train", file.string());
  if (json.has("optimizer")) info.optimizer = json.at("optimizer", file.string()).as_string("optimizer", file.string());
  return info;
}

CheckpointInfo load_checkpoint(const fs::path& dir, Module& model, const ModelConfig& config, Optimizer* optimizer) {
  const CheckpointInfo info = read_checkpoint_info(dir);
  const std::string config_file = (dir / "config.json").string();
  if (const std::string d = architecture_difference(info.config, config); !d.empty())
    throw Error("checkpoint: " + config_file + " describes another model: " + d + " (checkpoint, model)");

  // Read and check everything first; change the model only once all of it is good.
  std::vector<NamedParameter> params = model.named_parameters();
  std::map<std::string, Array> values;
  for (const NamedParameter& p : params)
    values[p.name] = read_parameter(dir / (p.name + ".npy"), p.name, p.parameter.shape());
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const fs::path f = e.path();
    if (f.extension() == ".npy" && !values.count(f.stem().string()))
      throw Error("checkpoint: " + f.string() + " holds a parameter '" + f.stem().string() +
                  "' that the model does not have");
  }

  std::vector<std::vector<Array>> slots;
  std::size_t optimizer_steps = 0;
  if (optimizer) {
    if (info.optimizer.empty()) throw Error("checkpoint: " + config_file + " has no optimizer state to resume from");
    if (info.optimizer != optimizer->name())
      throw Error("checkpoint: " + config_file + " holds the state of optimizer '" + info.optimizer +
                  "', not of '" + optimizer->name() + "'");
    const Json json = parse_json(read_file(config_file), config_file);
    optimizer_steps = json.at("optimizer_steps", config_file).as_size("optimizer_steps", config_file);
    for (const std::string& slot : optimizer->slot_names()) {
      slots.emplace_back();
      for (const NamedParameter& p : params)
        slots.back().push_back(read_parameter(dir / "optimizer" / slot / (p.name + ".npy"), p.name + " (optimizer " + slot + ")",
                                              p.parameter.shape()));
    }
  }

  for (NamedParameter& p : params) p.parameter.value() = values.at(p.name);
  if (optimizer) {
    for (std::size_t s = 0; s < slots.size(); ++s)
      for (std::size_t i = 0; i < params.size(); ++i) optimizer->slot(s, i) = slots[s][i];
    optimizer->set_steps(optimizer_steps);
  }
  return info;
}

}  // namespace gs::nn
