#pragma once
// One evaluation run as the GUI passes it around: fresh from the evaluation service, stored in
// the workspace's run history, or read back from it. The result is the core's typed
// kwb::EvaluationResult (read back from the history through its from_json), so a run from the
// history shows exactly as a live one.
#include <QList>
#include <QMetaType>
#include <QString>

#include <optional>

#include "core/eval/evaluation_result.h"

namespace kwb::ui {

struct EvaluationRun {
  qint64 historyId = 0;  // the workspace row; 0 until stored
  QString taskName;
  QString taskFolder;
  QString sourceName;  // the file the candidate came from
  QString startedAt;   // UTC, ISO 8601 with milliseconds
  QString finishedAt;
  kwb::Outcome outcome = kwb::Outcome::Error;
  QString message;
  QString arch;
  QString device;
  std::optional<kwb::EvaluationResult> result;  // empty in history listings; fetch the run for it
};

// Where an evaluation stands (kwb::EvalProgress in Qt terms).
struct EvaluationStep {
  QString stage;  // "compile", "evaluate", "time", "done"
  QString config;
  double fraction = 0;
  QString text;
  QList<double> samplesMs;  // timing: candidate sample times since the last delivered step
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::EvaluationRun)
Q_DECLARE_METATYPE(kwb::ui::EvaluationStep)
