// What every experiment reports, one header for its main(): statistics over seeds (stats.hpp), tables
// printed and written as CSV (table.hpp), and line plots drawn by gnuplot (plot.hpp).
#pragma once

#include "experiments/lib/plot.hpp"
#include "experiments/lib/stats.hpp"
#include "experiments/lib/table.hpp"
