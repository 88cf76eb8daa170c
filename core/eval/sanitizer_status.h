#pragma once
// compute-sanitizer's exit status as the word that counts (core/eval/sanitizer.h): its report
// shares the worker's stderr with whatever candidate code prints there, so the lines are
// details, while the exit status (--error-exitcode kSanitizerErrorStatus) is written by no
// candidate.
#include "core/eval/sanitizer.h"

namespace kwb {

inline constexpr int kSanitizerErrorStatus = 86;

// The tool's exit status (-1: none, it was killed) into `report`, as a note. kSanitizerErrorStatus
// with no error among the findings read: the report was garbled on the way, so one finding of the
// candidate's says so.
void holdToExitStatus(SanitizerReport &report, int exitStatus);

}  // namespace kwb
