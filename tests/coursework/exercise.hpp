// What makes a test case a check of one exercise (docs/coursework.md#a-teacher-adds-an-exercise).
//   EXERCISE_CASE("ex3", "softplus: ...")
// In the student build (GRADSCOPE_COURSEWORK=student, scripts/exercise) the check tests the student's
// answers in student/: its test case is "ex3 softplus: ..." with the tag [ex3]. In the normal build it
// tests the reference solutions in solutions/: "solution ex3 softplus: ..." with the tag
// [solution-ex3], so that nobody takes the solutions passing for their own work.
#pragma once

#include <exception>
#include <string>

#include "../check.hpp"
#include "nn/config.hpp"

#ifdef GRADSCOPE_COURSEWORK_STUDENT
#define GS_EXERCISE_NAME ""
#define GS_EXERCISE_TAG "["
#else
#define GS_EXERCISE_NAME "solution "
#define GS_EXERCISE_TAG "[solution-"
#endif

#define EXERCISE_CASE(ex, title) TEST_CASE(GS_EXERCISE_NAME ex " " title, "[coursework]" GS_EXERCISE_TAG ex "]")

#ifdef GRADSCOPE_EXERCISE
// In the student build an exercise is one executable (tests/coursework/CMakeLists.txt), so this
// translator is registered once in each. An exception that is not a gs::Error comes from xtensor or
// the standard library, whose messages name neither shapes nor a line ("Incompatible dimension of
// arrays, compile in DEBUG for more info"): the message says so and how gdb finds the line.
CATCH_TRANSLATE_EXCEPTION(const std::exception& e) {
  if (dynamic_cast<const gs::Error*>(&e)) return e.what();
  return std::string(e.what()) +
         "\n(thrown by xtensor or the standard library, which name no shapes and no line: usually two arrays whose"
         " shapes do not match, in your answer or in an op it calls. To see the line: scripts/exercise gdb " GRADSCOPE_EXERCISE
         ", then at gdb's prompt: catch throw, continue, bt)";
}
#endif

namespace gs::coursework {

// The folder whose answers the checks test: tests/coursework/student or tests/coursework/solutions.
// An exercise whose answer is a file of numbers (ex12, ex13) reads it from here.
inline std::string answers_dir() { return GRADSCOPE_COURSEWORK_ANSWERS; }

// The small model the model-level checks use: V=7, T=4, d=8, 2 heads, `layers` blocks of `placement`
// (a preset or a triple P/N/R, nn::apply_placement).
inline nn::ModelConfig small_config(const std::string& placement, std::size_t layers) {
  nn::ModelConfig c;
  c.vocab = 7;
  c.context = 4;
  c.d_model = 8;
  c.heads = 2;
  c.layers = layers;
  nn::apply_placement(c, placement);
  return c;
}

}  // namespace gs::coursework
