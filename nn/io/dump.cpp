#include "nn/io/dump.hpp"

#include <nlohmann/json.hpp>

#include "engine/tape.hpp"
#include "nn/io/config_json.hpp"
#include "nn/io/directory_write.hpp"
#include "nn/io/npy.hpp"

namespace gs::nn {

double write_dump(const std::filesystem::path& dir, std::string_view program, const ModelConfig& config, Module& model,
                  const Batch& batch, const BatchLoss& loss,
                  const std::vector<std::pair<std::string, Array>>& extra) {
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
