// What --merge accepts as a value a run wrote: checked by the quantity's name, the names every grid
// experiment's result shares. A cross-entropy ("loss", "losses", "final_loss", "init_loss") is >= 0
// (NaN or +Inf where the run blew up); a step number or count ("blew_up", "steps") is a whole number
// >= 0; a "verdict" is a code of Verdict (training.hpp). A cell that blew up at step k > 0 has k
// training losses, a NaN final loss (no evaluation was made) and the verdict diverged.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gs::experiments {

// Throws gs::Error("WHERE has final_loss -7, not a loss ...") for the first value `result` (a cell's
// result, non-finite numbers already decoded) could not hold; `where` is "--merge DIR: cell 3".
void check_values(const nlohmann::json& result, const std::string& where);

}  // namespace gs::experiments
