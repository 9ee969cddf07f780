// Everything a user of the engine needs: include this one header.
#pragma once

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/tools/gradcheck.hpp"
#include "engine/tools/inspect.hpp"
#include "engine/tools/hvp.hpp"
#include "engine/tools/eigen.hpp"
#include "engine/ops/elementwise.hpp"
#include "engine/ops/linalg.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/ops/select.hpp"
#include "engine/ops/shape.hpp"
#include "engine/parameter.hpp"
#include "engine/tape.hpp"
#include "engine/var.hpp"
