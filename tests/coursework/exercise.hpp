// What makes a test case a check of one exercise (docs/coursework.md#a-teacher-adds-an-exercise).
//   EXERCISE_CASE("ex3", "softplus: ...")
// In the student build (GRADSCOPE_COURSEWORK=student, scripts/exercise) the check tests the student's
// answers in student/: its test case is "ex3 softplus: ..." with the tag [ex3]. In the normal build it
// tests the reference solutions in solutions/: "solution ex3 softplus: ..." with the tag
// [solution-ex3], so that nobody takes the solutions passing for their own work.
#pragma once

#include <string>

#include "../check.hpp"

#ifdef GRADSCOPE_COURSEWORK_STUDENT
#define GS_EXERCISE_NAME ""
#define GS_EXERCISE_TAG "["
#else
#define GS_EXERCISE_NAME "solution "
#define GS_EXERCISE_TAG "[solution-"
#endif

#define EXERCISE_CASE(ex, title) TEST_CASE(GS_EXERCISE_NAME ex " " title, "[coursework]" GS_EXERCISE_TAG ex "]")

namespace gs::coursework {

// The folder whose answers the checks test: tests/coursework/student or tests/coursework/solutions.
// An exercise whose answer is a file of numbers (ex12, ex13) reads it from here.
inline std::string answers_dir() { return GRADSCOPE_COURSEWORK_ANSWERS; }

}  // namespace gs::coursework
