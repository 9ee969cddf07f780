#include "nn/io/dump.hpp"

#include "engine/tape.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/config_json.hpp"
#include "nn/io/npy.hpp"

namespace gs::nn {

double write_dump(const std::filesystem::path& dir, const ModelConfig& config, Module& model, const Batch& batch,
                  const LossFunction& loss) {
  namespace fs = std::filesystem;
  Tape& tape = Tape::current();
  tape.reset();
  model.zero_grad();
  const Var l = loss(batch.inputs, batch.targets);
  const double value = l.value()();
  l.backward();

  for (const char* sub : {"params", "grads", "batch"}) fs::create_directories(dir / sub);
  write_file_atomically(dir / "config.json", json_object(model_config_members(config)) + "\n");
  for (const NamedParameter& p : model.named_parameters()) {
    write_npy(dir / "params" / (p.name + ".npy"), p.parameter.value());
    write_npy(dir / "grads" / (p.name + ".npy"), p.parameter.grad());
  }
  write_npy(dir / "batch" / "inputs.npy", batch.inputs);
  write_npy(dir / "batch" / "targets.npy", batch.targets);
  write_npy(dir / "loss.npy", Array{value});
  tape.reset();
  return value;
}

}  // namespace gs::nn
