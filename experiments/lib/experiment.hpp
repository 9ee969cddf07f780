// The prelude of an experiment's main file (experiments/*.cpp) and of nothing else: what every
// experiment uses, and the namespaces it uses unqualified. A main begins
//
//   #include <map>                                   the standard headers it needs beyond those below
//
//   #include "experiments/lib/experiment.hpp"       first of the project's headers
//   #include "analysis/probe.hpp"                   then what only this experiment uses, sorted
//
// and has no using-directive of its own: gs, gs::experiments and gs::analysis are open here (should two
// of them declare one name, the main qualifies it where it uses it). explorer.cpp and tape_demo.cpp are
// no experiments (the page viewer; the engine at a glance, which names experiments:: on purpose) and
// keep their own preambles.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "experiments/lib/cells.hpp"
#include "experiments/lib/harness.hpp"
#include "experiments/lib/report.hpp"
#include "experiments/lib/training.hpp"
#include "experiments/lib/training_flags.hpp"

namespace gs::analysis {}  // opened below; the experiment includes the parts it uses

using namespace gs;
using namespace gs::experiments;
using namespace gs::analysis;
