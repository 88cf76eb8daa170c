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
inline QColor outcomeColour(Outcome outcome) { return toneColour(toneOf(outcome)); }

}  // namespace kwb::ui
