// Ops that move values without changing them: reshape, slice, concat, split, and the row gather that
// an embedding lookup is. Their backward functions move the gradient back the same way.
#pragma once

#include <vector>

#include "engine/var.hpp"

namespace gs {

// Same values, new shape (same number of elements). One entry of `shape` may be -1: inferred.
Var reshape(const Var& x, const std::vector<long>& shape, Site site = Site::current());

// x[..., start:stop, ...] along one axis (step 1).
Var slice(const Var& x, int axis, std::size_t start, std::size_t stop, Site site = Site::current());

// Joins along an axis; every other dimension must agree.
Var concat(const std::vector<Var>& xs, int axis, Site site = Site::current());

// Cuts along an axis into consecutive pieces of the given sizes (they must add up to the axis).
std::vector<Var> split(const Var& x, int axis, const std::vector<std::size_t>& sizes, Site site = Site::current());

// Row gather, the embedding lookup: out[i..., :] = table[ids[i...], :]. table (V, d...), ids any
// shape of integers in [0, V); out has shape ids.shape + table.shape[1:]. Backward: scatter-add.
Var gather_rows(const Var& table, const IndexArray& ids, Site site = Site::current());

}  // namespace gs
