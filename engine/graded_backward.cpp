#include "engine/graded_backward.hpp"

#include <algorithm>
#include <string>

#include <xtensor/xnoalias.hpp>

#include "engine/broadcast.hpp"
#include "engine/tape.hpp"

namespace gs {
namespace {

// The coefficients g_0 .. g_K of one entry's gradient; a coefficient no path has reached is absent.
struct GradedGrad {
  std::vector<Array> coef;
  std::vector<bool> has;
};

void add_into(GradedGrad& g, std::size_t j, Array part, std::size_t K) {
  if (g.coef.empty()) {
    g.coef.resize(K + 1);
    g.has.assign(K + 1, false);
  }
  if (g.has[j]) {
    xt::noalias(g.coef[j]) += part;
  } else {
    g.coef[j] = std::move(part);
    g.has[j] = true;
  }
}

// raises[i][k]: the edge from input k of entry i is marked (multiplies by z). Throws for an edge that
// is not on the tape.
std::vector<std::vector<bool>> marked_inputs(const Tape& tape, const std::vector<TapeEdge>& marked, Site site) {
  const std::size_t n = tape.size();
  std::vector<std::vector<bool>> raises(n);
  for (const TapeEdge& edge : marked) {
    if (edge.entry < 0 || static_cast<std::size_t>(edge.entry) >= n ||
        edge.input >= tape.entry(edge.entry).inputs.size())
      fail("graded_backward", site, "marked edge (entry " + std::to_string(edge.entry) + ", input " +
                                        std::to_string(edge.input) + ") is not on the tape (size " +
                                        std::to_string(n) + ")");
    std::vector<bool>& row = raises[static_cast<std::size_t>(edge.entry)];
    row.resize(tape.entry(edge.entry).inputs.size(), false);
    row[edge.input] = true;
  }
  return raises;
}

// g_0 .. g_K of one entry, a zero array (in the shape of `value`) where no path arrived.
std::vector<Array> coefficients(const GradedGrad& g, const Array& value, std::size_t K) {
  std::vector<Array> coef;
  for (std::size_t j = 0; j <= K; ++j) coef.push_back(!g.coef.empty() && g.has[j] ? g.coef[j] : Array(xt::zeros_like(value)));
  return coef;
}

}  // namespace

std::vector<std::vector<Array>> graded_backward(const Var& root, const std::vector<TapeEdge>& marked, std::size_t K,
                                                const std::vector<Var>& wanted, Site site) {
  const Entry& r = root.tape(site).checked_entry(root.index(), root.generation(), "graded_backward", site);
  if (r.value.size() != 1)
    fail("graded_backward", site, "the root has shape " + shape_str(shape_of(r.value)) +
                                      "; without a seed it must be a scalar (or pass a seed of that shape)");
  return graded_backward(root, xt::ones_like(r.value), marked, K, wanted, site);
}

namespace {

// Throws unless the root needs a gradient and the seed has its shape.
void check_root(const Tape& tape, const Var& root, const Array& seed, const Site& site) {
  const Entry& r = tape.checked_entry(root.index(), root.generation(), "graded_backward", site);
  if (!r.requires_grad)
    fail("graded_backward", site, "the root (tape index " + std::to_string(root.index()) + ", op " + r.op +
                                      ") does not require a gradient: no leaf it depends on has requires_grad");
  if (shape_of(seed) != shape_of(r.value))
    fail("graded_backward", site, "the seed has shape " + shape_str(shape_of(seed)) + " but the root has shape " +
                                      shape_str(shape_of(r.value)));
}

}  // namespace

std::vector<std::vector<Array>> graded_backward(const Var& root, const Array& seed, const std::vector<TapeEdge>& marked,
                                                std::size_t K, const std::vector<Var>& wanted, Site site) {
  Tape& tape = root.tape(site);
  check_root(tape, root, seed, site);
  const int top = root.index();
  const std::size_t n = tape.size();

  const std::vector<std::vector<bool>> raises = marked_inputs(tape, marked, site);
  std::vector<bool> keep(n, false);  // the wanted entries keep their coefficients to the end
  for (const Var& v : wanted) {
    if (&v.tape(site) != &tape) fail("graded_backward", site, "a wanted Var lives on another tape than the root");
    tape.checked_entry(v.index(), v.generation(), "graded_backward", site);  // throws for a stale handle
    keep[static_cast<std::size_t>(v.index())] = true;
  }

  std::vector<GradedGrad> grads(n);
  add_into(grads[static_cast<std::size_t>(top)], 0, seed, K);
  std::vector<const Array*> input_values;  // what BackwardArgs lists, refilled for each entry
  std::vector<bool> input_needs_grad;
  for (int i = top; i >= 0; --i) {  // the ordinary reverse sweep, one coefficient at a time
    const auto ui = static_cast<std::size_t>(i);
    GradedGrad& g = grads[ui];
    if (g.coef.empty()) continue;  // on no path from the root
    const Entry& e = tape.entry(i);
    if (!e.hooks.empty())
      fail("graded_backward", site, "tape index " + std::to_string(i) + " (op " + e.op +
                                        ") has gradient hooks, which act on a whole gradient and not on its parts");
    if (e.backward) {
      input_values.clear();
      input_needs_grad.clear();
      for (int in : e.inputs) {
        input_values.push_back(&tape.entry(in).value);
        input_needs_grad.push_back(tape.entry(in).requires_grad);
      }
      for (std::size_t j = 0; j <= K; ++j) {
        if (!g.has[j]) continue;
        const BackwardArgs args{g.coef[j], e.value, input_values, input_needs_grad};
        Grads parts = e.backward(args);  // the op's own rule, applied to coefficient j alone
        if (parts.size() != e.inputs.size())
          fail(e.op, e.site, "backward returned " + std::to_string(parts.size()) + " gradients for " +
                                 std::to_string(e.inputs.size()) + " inputs");
        for (std::size_t k = 0; k < parts.size(); ++k) {
          if (!input_needs_grad[k]) continue;
          const bool up = k < raises[ui].size() && raises[ui][k];
          const std::size_t to = up ? std::min(j + 1, K) : j;  // a marked edge: z^j -> z^(j+1); K holds "K or more"
          add_into(grads[static_cast<std::size_t>(e.inputs[k])], to,
                   sum_to_shape(std::move(parts[k]), args.in(k).shape(), e.op, e.site), K);
        }
      }
    }
    if (!keep[ui]) g = GradedGrad{};  // its coefficients have gone to its inputs
  }

  std::vector<std::vector<Array>> out;
  for (const Var& v : wanted) out.push_back(coefficients(grads[static_cast<std::size_t>(v.index())], tape.entry(v.index()).value, K));
  return out;
}

}  // namespace gs
