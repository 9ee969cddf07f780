// The engine's core in one header: arrays, errors, the tape, its handles and the ops. The tools that
// read a tape (engine/tools/gradcheck.hpp, engine/tools/inspect.hpp) are included where they are used.
#pragma once

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/linalg.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/ops/select.hpp"
#include "engine/ops/shape.hpp"
#include "engine/parameter.hpp"
#include "engine/tape.hpp"
#include "engine/var.hpp"
