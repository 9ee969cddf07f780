#include "engine/tools/inspect.hpp"

#include "engine/tape.hpp"

namespace gs {

std::vector<ContributionInfo> contributions(const Var& v, Site site) {
  const Entry& e = v.entry(site);
  const Tape& tape = v.tape(site);
  std::string what = "tape index " + std::to_string(v.index()) + " (op " + e.op;
  what += e.label.empty() ? ")" : ", label " + e.label + ")";
  if (!e.has_grad)
    fail("contributions", site, what + " has no gradient: run backward() from a root that depends on it first");
  if (e.contributions.empty() && !tape.keep_contributions)
    fail("contributions", site, what + ": the tape kept no contributions; set tape.keep_contributions = true "
                                       "before backward()");
  std::vector<ContributionInfo> out;
  for (const Contribution& c : e.contributions) {
    const Entry& sender = tape.entry(c.from);
    out.push_back({c.from, sender.op, sender.label, sender.scope, c.grad, norm(c.grad)});
  }
  return out;
}

}  // namespace gs
