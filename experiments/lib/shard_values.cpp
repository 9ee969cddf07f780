#include "experiments/lib/shard_values.hpp"

#include <cmath>

#include "engine/error.hpp"
#include "experiments/lib/stats.hpp"

namespace gs::experiments {

namespace {

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

}  // namespace

void check_values(const nlohmann::json& result, const std::string& where) {
  check_numbers(result, "", where);
  check_blow_up(result, where);
}

}  // namespace gs::experiments
