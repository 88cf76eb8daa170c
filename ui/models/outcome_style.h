#pragma once
// How an outcome reads and looks in every view: "compile error" in words, green for what
// passed, grey for what did not run, amber for warnings and timeouts, red for failures.
#include <QColor>
#include <QString>

#include "core/eval/outcome.h"

namespace kwb::ui {

// "compile-error" -> "compile error"
QString outcomeText(Outcome outcome);

enum class OutcomeTone { Good, Quiet, Warning, Bad };
OutcomeTone toneOf(Outcome outcome);
QColor toneColour(OutcomeTone tone);
// A whole run in one colour (the Results headline, the History list): it passed, it did not
// run, or it failed; a timeout or an unsupported form counts as failed there.
QColor runColour(Outcome outcome);

}  // namespace kwb::ui
