// What every experiment reports, one header for its main(): statistics over seeds (stats.hpp), tables
// printed and written as CSV (table.hpp), line plots drawn by gnuplot (plot.hpp), and a CSV file
// written as it grows (csv_writer.hpp).
#pragma once

#include "experiments/lib/csv_writer.hpp"
#include "experiments/lib/plot.hpp"
#include "experiments/lib/stats.hpp"
#include "experiments/lib/table.hpp"
