#include "ui/models/evaluation_result_model.h"

#include <algorithm>
#include <string>

#include <QBrush>
#include <QColor>
#include <QFileInfo>
#include <QStringList>

#include "core/compile/diagnostics.h"
#include "ui/models/outcome_style.h"

namespace kwb::ui {

namespace {

using Row = EvaluationResultModel::Row;
using Kind = EvaluationResultModel::Kind;
using Column = EvaluationResultModel::Column;

QString qs(const std::string &text) { return QString::fromStdString(text); }

QString figure(double value) {
  return QString::number(value, 'g', 3);
}

QString exactFigure(double value) {
  return QString::number(value, 'g', 7);
}

QString dims(const std::array<std::int64_t, 3> &d) {
  QStringList parts;
  for (const auto v : d) parts << QString::number(v);
  while (parts.size() > 1 && parts.last() == QLatin1String("1")) parts.removeLast();
  return parts.join(QStringLiteral("×"));
}

QString launchText(const LaunchDims &launch) {
  QString text = QStringLiteral("grid %1 · block %2").arg(dims(launch.grid), dims(launch.block));
  if (launch.sharedBytes > 0) text += QStringLiteral(" · %1 B shared").arg(launch.sharedBytes);
  return text;
}

QString millis(double ms) {
  if (ms >= 100) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 1);
  if (ms >= 1) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 3);
  return QStringLiteral("%1 µs").arg(ms * 1000.0, 0, 'f', ms * 1000.0 >= 10 ? 1 : 2);
}

QString statsTip(const QString &who, const SampleStats &stats) {
  return QStringLiteral("%1: median %2, IQR %3, min %4, mean %5, %6 samples, spread %7%")
      .arg(who, millis(stats.median), millis(stats.iqr), millis(stats.min), millis(stats.mean))
      .arg(stats.count)
      .arg(stats.relativeSpread * 100.0, 0, 'f', 2);
}

Row runRow(const EvaluationResult &result) {
  Row row;
  row.kind = Kind::Run;
  row.outcome = QLatin1String(toString(result.outcome));
  row.tone = toneOf(result.outcome);
  row.text[Column::NameColumn] = EvaluationResultModel::tr("run");
  row.text[Column::OutcomeColumn] = outcomeText(result.outcome);
  row.text[Column::DetailColumn] = qs(result.message);
  row.tip[Column::DetailColumn] = row.text[Column::DetailColumn];
  return row;
}

// One compute-sanitizer finding: its file and line, what the tool saw, and the report's lines.
Row sanitizerFindingRow(const SanitizerFinding &f) {
  Row row;
  row.kind = Kind::SanitizerFinding;
  const bool mine = f.origin == SanitizerOrigin::Candidate;
  row.outcome = f.warning ? QStringLiteral("warning") : QStringLiteral("error");
  row.tone = !mine ? OutcomeTone::Quiet : f.warning ? OutcomeTone::Warning : OutcomeTone::Bad;
  QString where = qs(f.where());
  for (const auto &l : f.locations)
    if (!l.file.empty() && l.line > 0) {
      where = QFileInfo(qs(l.file)).fileName() + QStringLiteral(":%1").arg(l.line);
      break;
    }
  row.text[Column::NameColumn] = where;
  row.text[Column::OutcomeColumn] = row.outcome;
  QString what = qs(f.what);
  if (f.hazards) what += EvaluationResultModel::tr(" (%1 hazards)").arg(f.hazards);
  if (!f.thread.empty()) what += EvaluationResultModel::tr(", thread %1 of block %2").arg(qs(f.thread), qs(f.block));
  if (f.occurrences > 1) what += EvaluationResultModel::tr(" (reported %1 times)").arg(f.occurrences);
  if (!mine) what += EvaluationResultModel::tr(" — in the %1's code").arg(QLatin1String(sanitizerOriginName(f.origin)));
  row.text[Column::DetailColumn] = what;
  row.tip[Column::DetailColumn] = qs(f.details);
  row.tip[Column::NameColumn] = qs(f.details);
  return row;
}

// A tool's run: clean, its errors in the candidate's code, or why it said nothing.
Row sanitizerRow(const SanitizeResult &s, const SanitizerReport &r) {
  Row row;
  row.kind = Kind::Sanitizer;
  const auto errors = r.candidateErrors();
  const bool finished = r.completed && r.problem.empty();
  row.outcome = !finished ? QStringLiteral("incomplete") : errors ? QStringLiteral("errors") : QStringLiteral("clean");
  row.tone = !finished ? OutcomeTone::Warning : errors ? OutcomeTone::Bad : OutcomeTone::Good;
  row.text[Column::NameColumn] = QLatin1String(sanitizerToolName(r.tool));
  row.text[Column::OutcomeColumn] =
      !finished ? EvaluationResultModel::tr("incomplete")
      : errors  ? EvaluationResultModel::tr("%n error(s)", nullptr, static_cast<int>(errors))
                : EvaluationResultModel::tr("clean");
  QStringList detail;
  if (!r.problem.empty()) detail << qs(r.problem);
  detail << EvaluationResultModel::tr("configuration %1, seed %2").arg(qs(s.config)).arg(s.seed);
  detail << EvaluationResultModel::tr("%1 s").arg(r.seconds, 0, 'f', 1);
  if (!r.evaluation.empty()) detail << EvaluationResultModel::tr("the run under it: %1").arg(qs(r.evaluation));
  row.text[Column::DetailColumn] = detail.join(QStringLiteral("; "));
  QStringList tip = detail;
  for (const auto &note : r.notes) tip << qs(note);
  row.tip[Column::DetailColumn] = tip.join(QLatin1Char('\n'));
  for (const auto &f : r.findings) row.children.push_back(sanitizerFindingRow(f));
  return row;
}

Row diagnosticRow(const Diagnostic &d, const QString &prefix) {
  Row row;
  row.kind = Kind::Diagnostic;
  row.outcome = QString::fromUtf8(severityName(d.severity));
  row.tone = d.severity == Diagnostic::Severity::Error     ? OutcomeTone::Bad
             : d.severity == Diagnostic::Severity::Warning ? OutcomeTone::Warning
                                                           : OutcomeTone::Quiet;
  const QString file = QFileInfo(qs(d.file)).fileName();
  QString where = file;
  if (d.line > 0) where += QStringLiteral(":%1").arg(d.line);
  if (d.line > 0 && d.column > 0) where += QStringLiteral(":%1").arg(d.column);
  row.text[Column::NameColumn] = prefix + where;
  row.text[Column::OutcomeColumn] = row.outcome;
  row.text[Column::DetailColumn] = qs(d.message);
  row.tip[Column::DetailColumn] = qs(formatDiagnostic(d));
  return row;
}

Row compileRow(const EvaluationResult &result) {
  const CompileResult &compile = result.candidate;
  Row row;
  row.kind = Kind::Compile;
  row.outcome = compile.ok                                  ? QStringLiteral("ok")
                : result.outcome == Outcome::Unsupported ? QStringLiteral("unsupported")
                                                             : QStringLiteral("compile-error");
  row.tone = compile.ok ? OutcomeTone::Good
             : result.outcome == Outcome::Unsupported ? OutcomeTone::Warning
                                                      : OutcomeTone::Bad;
  row.text[Column::NameColumn] = EvaluationResultModel::tr("compile");
  row.text[Column::OutcomeColumn] = QString(row.outcome).replace(QLatin1Char('-'), QLatin1Char(' '));

  QStringList details;
  QStringList tips;
  for (const KernelResources &k : compile.kernels) {
    const int spill = k.spillStoreBytes + k.spillLoadBytes;
    details << EvaluationResultModel::tr("%1: %2 registers, %3 B shared%4")
                   .arg(qs(k.name))
                   .arg(k.registers)
                   .arg(k.sharedStaticBytes)
                   .arg(spill > 0 ? EvaluationResultModel::tr(", %1 B spilled").arg(spill) : QString());
    tips << EvaluationResultModel::tr(
                "%1: %2 registers, %3 B static shared, %4 B constant, %5 B stack, %6/%7 B "
                "spill stores/loads")
                .arg(qs(k.name))
                .arg(k.registers)
                .arg(k.sharedStaticBytes)
                .arg(k.constantBytes)
                .arg(k.stackFrameBytes)
                .arg(k.spillStoreBytes)
                .arg(k.spillLoadBytes);
  }
  if (!compile.ok) details.prepend(qs(result.message));
  QStringList about;
  about << QLatin1String(sourceFormName(compile.form));
  if (!compile.toolkitVersion.empty()) about << EvaluationResultModel::tr("CUDA %1").arg(qs(compile.toolkitVersion));
  if (compile.cacheHit)
    about << EvaluationResultModel::tr("from the compile cache");
  else
    about << EvaluationResultModel::tr("%1 s").arg(compile.seconds, 0, 'f', 2);
  row.text[Column::DetailColumn] = details.join(QStringLiteral("; "));
  row.tip[Column::DetailColumn] =
      (tips + QStringList{about.join(QStringLiteral(" · "))}).join(QLatin1Char('\n'));

  for (const Diagnostic &d : compile.diagnostics) row.children.push_back(diagnosticRow(d, QString()));
  for (const Diagnostic &d : result.referenceDiagnostics)
    row.children.push_back(diagnosticRow(d, EvaluationResultModel::tr("reference ")));
  return row;
}

Row seedRow(const SeedOutcome &s) {
  Row row;
  row.kind = Kind::Seed;
  row.outcome = s.passed ? QStringLiteral("passed") : QStringLiteral("failed");
  row.tone = s.passed ? OutcomeTone::Good : OutcomeTone::Bad;
  row.text[Column::NameColumn] = EvaluationResultModel::tr("seed %1").arg(s.seed);
  row.text[Column::OutcomeColumn] = row.outcome;
  row.text[Column::DetailColumn] = qs(s.summary);
  row.tip[Column::DetailColumn] = row.text[Column::DetailColumn];

  const bool several = s.outputs.size() > 1;
  QStringList errors, errorTips, mismatches, mismatchTips, checks;
  for (const OutputCheck &output : s.outputs) {
    const QString tensor = qs(output.tensor);
    const QString label = several ? tensor + QStringLiteral(": ") : QString();
    if (output.comparison) {
      const ComparisonSummary &c = *output.comparison;
      const QString relative = c.maxRelError ? figure(*c.maxRelError) : QStringLiteral("inf");
      errors << label + EvaluationResultModel::tr("abs %1 · rel %2 · L2 %3")
                            .arg(figure(c.maxAbsError), relative, figure(c.relativeL2Error));
      errorTips << EvaluationResultModel::tr(
                       "%1: max abs error %2, max rel error %3, relative L2 error %4; %5 of %6 "
                       "elements differ")
                       .arg(tensor, exactFigure(c.maxAbsError),
                            c.maxRelError ? exactFigure(*c.maxRelError) : QStringLiteral("inf"),
                            exactFigure(c.relativeL2Error))
                       .arg(c.mismatches)
                       .arg(c.checked);
      int shown = 0;
      for (const MismatchRecord &m : c.firstMismatches) {
        QStringList at;
        if (!m.coordinates.empty()) {
          for (const auto x : m.coordinates) at << QString::number(x);
        } else {
          at << QString::number(m.index);
        }
        const QString item = EvaluationResultModel::tr("%1[%2]: got %3, want %4")
                                 .arg(tensor, at.join(QStringLiteral(", ")), qs(m.got), qs(m.want));
        if (shown++ < 3) mismatches << item;
        mismatchTips << item;
      }
    }
    if (output.unwritten && output.unwritten->count > 0)
      checks << EvaluationResultModel::tr("%1%2 unwritten").arg(label).arg(output.unwritten->count);
  }
  if (checks.isEmpty() && s.unwritten > 0) checks << EvaluationResultModel::tr("%1 unwritten").arg(s.unwritten);
  if (s.race) checks << EvaluationResultModel::tr("race");
  if (s.inputsModified) checks << EvaluationResultModel::tr("inputs modified");
  row.text[Column::ErrorColumn] = errors.join(QStringLiteral("; "));
  row.tip[Column::ErrorColumn] = errorTips.join(QLatin1Char('\n'));
  row.text[Column::MismatchColumn] = mismatches.join(QStringLiteral("; "));
  row.tip[Column::MismatchColumn] = mismatchTips.join(QLatin1Char('\n'));
  row.text[Column::ChecksColumn] = checks.join(QStringLiteral(", "));
  return row;
}

Row configRow(const ConfigOutcome &c) {
  Row row;
  row.kind = Kind::Config;
  row.outcome = QLatin1String(toString(c.outcome));
  row.tone = toneOf(c.outcome);
  row.text[Column::NameColumn] = qs(c.config);
  row.text[Column::OutcomeColumn] = outcomeText(c.outcome);
  row.text[Column::DetailColumn] =
      c.errorName.empty() ? qs(c.message) : qs(c.errorName) + QStringLiteral(": ") + qs(c.message);
  row.tip[Column::DetailColumn] = row.text[Column::DetailColumn];
  row.text[Column::LaunchColumn] = launchText(c.candidateLaunch);
  row.tip[Column::LaunchColumn] = EvaluationResultModel::tr("candidate: %1\nreference: %2")
                                      .arg(launchText(c.candidateLaunch), launchText(c.referenceLaunch));

  if (c.occupancy) {
    const Occupancy &occupancy = *c.occupancy;
    if (!occupancy.error.empty()) {
      row.text[Column::OccupancyColumn] = EvaluationResultModel::tr("not launchable");
      row.tip[Column::OccupancyColumn] = qs(occupancy.error);
    } else {
      row.text[Column::OccupancyColumn] = EvaluationResultModel::tr("%1% · %2 blocks/SM")
                                              .arg(occupancy.occupancy * 100.0, 0, 'f', 0)
                                              .arg(occupancy.activeBlocksPerSM);
      row.tip[Column::OccupancyColumn] = EvaluationResultModel::tr("%1\nlimited by %2")
                                             .arg(qs(occupancy.explanation), QLatin1String(toString(occupancy.limiter)));
    }
  }

  if (c.timing) {
    const TimingOutcome &timing = *c.timing;
    if (timing.ok) {
      row.text[Column::TimeColumn] =
          EvaluationResultModel::tr("%1 (IQR %2)").arg(millis(timing.candidate.median), millis(timing.candidate.iqr));
      QStringList tips{statsTip(EvaluationResultModel::tr("candidate"), timing.candidate)};
      if (timing.referenceTimed) tips << statsTip(EvaluationResultModel::tr("reference"), timing.reference);
      tips << EvaluationResultModel::tr("timer %1, stopped: %2").arg(qs(timing.timer), qs(timing.stopReason));
      if (!timing.timerNote.empty()) tips << qs(timing.timerNote);
      row.tip[Column::TimeColumn] = tips.join(QLatin1Char('\n'));
      if (timing.referenceTimed) {
        row.text[Column::SpeedupColumn] = QStringLiteral("%1×").arg(timing.speedup, 0, 'f', 2);
        row.tip[Column::SpeedupColumn] = EvaluationResultModel::tr("reference median / candidate median");
      } else {
        row.tip[Column::SpeedupColumn] = EvaluationResultModel::tr("the reference was not timed");
      }
    } else {
      row.text[Column::TimeColumn] = EvaluationResultModel::tr("not timed");
      row.tip[Column::TimeColumn] = qs(timing.error);
    }
    if (c.torch) {
      const TorchBaseline &b = *c.torch;
      auto side = [](const QString &name, double speedup) {
        return speedup > 0 ? EvaluationResultModel::tr("%1 %2×").arg(name).arg(speedup, 0, 'f', 2)
                           : EvaluationResultModel::tr("%1 –").arg(name);
      };
      row.text[Column::TorchColumn] = side(EvaluationResultModel::tr("eager"), b.speedupEager) + QStringLiteral(" · ") +
                                      side(EvaluationResultModel::tr("compile"), b.speedupCompiled);
      auto tip = [](const QString &name, double ms, std::size_t n, double spread, const std::string &error) {
        return ms > 0 ? EvaluationResultModel::tr("%1: %2 (n=%3, IQR/median %4%)")
                            .arg(name, millis(ms))
                            .arg(n)
                            .arg(spread * 100.0, 0, 'f', 1)
                      : EvaluationResultModel::tr("%1: not measured%2").arg(name, error.empty() ? QString() : QStringLiteral(": ") + qs(error));
      };
      row.tip[Column::TorchColumn] =
          EvaluationResultModel::tr("the task's PyTorch module on the same inputs, candidate median against it\n") +
          tip(EvaluationResultModel::tr("PyTorch eager"), b.eagerMs, b.eagerSamples, b.eagerSpread, b.eagerError) +
          QLatin1Char('\n') +
          tip(EvaluationResultModel::tr("torch.compile"), b.compiledMs, b.compiledSamples, b.compiledSpread, b.compiledError) +
          (b.timer.empty() ? QString() : EvaluationResultModel::tr("\ntimer %1").arg(qs(b.timer)));
    }
    QStringList checks, checkTips;
    if (timing.suspicious) {
      checks << EvaluationResultModel::tr("suspicious");
      checkTips << qs(timing.suspiciousReason);
    }
    if (timing.throttledSamples > 0) {
      checks << EvaluationResultModel::tr("%1 throttled").arg(timing.throttledSamples);
      checkTips << EvaluationResultModel::tr("samples slowed by power or heat (NVML)");
    }
    for (const Finding &finding : timing.findings) {
      checks << qs(finding.reason);
      checkTips << qs(finding.message);
    }
    row.text[Column::ChecksColumn] = checks.join(QStringLiteral(", "));
    row.tip[Column::ChecksColumn] = checkTips.join(QLatin1Char('\n'));
  }
  for (const SeedOutcome &s : c.seeds) row.children.push_back(seedRow(s));
  return row;
}

}  // namespace

EvaluationResultModel::EvaluationResultModel(QObject *parent) : QAbstractItemModel(parent) {}

void EvaluationResultModel::setResult(const EvaluationResult &result) {
  std::vector<Row> rows;
  // A result made before any compile (the task did not load, cancelled at once) has no compile row.
  const bool compiled = result.candidate.ok || !result.candidate.diagnostics.empty() ||
                        !result.candidate.kernels.empty() || result.candidate.seconds > 0 ||
                        result.outcome == Outcome::CompileError || result.outcome == Outcome::Unsupported;
  if (compiled) rows.push_back(compileRow(result));
  for (const ConfigOutcome &c : result.configs) rows.push_back(configRow(c));
  const bool compileSaysIt = !rows.empty() && rows.front().kind == Kind::Compile && !result.candidate.ok;
  if (result.configs.empty() && !compileSaysIt) rows.push_back(runRow(result));
  if (result.sanitize) {
    if (!result.sanitize->problem.empty()) {
      Row row;
      row.kind = Kind::Sanitizer;
      row.outcome = QStringLiteral("not-run");
      row.tone = OutcomeTone::Quiet;
      row.text[Column::NameColumn] = tr("sanitize");
      row.text[Column::OutcomeColumn] = tr("not run");
      row.text[Column::DetailColumn] = qs(result.sanitize->problem);
      row.tip[Column::DetailColumn] = row.text[Column::DetailColumn];
      rows.push_back(std::move(row));
    }
    for (const auto &r : result.sanitize->reports) rows.push_back(sanitizerRow(*result.sanitize, r));
  }
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

void EvaluationResultModel::clear() {
  beginResetModel();
  rows_.clear();
  endResetModel();
}

QModelIndex EvaluationResultModel::firstOf(Kind kind) const {
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].kind == kind) return index(static_cast<int>(i), 0);
  return {};
}

const EvaluationResultModel::Row *EvaluationResultModel::rowAt(const QModelIndex &index) const {
  if (!index.isValid()) return nullptr;
  if (index.internalId() == 0) return &rows_[static_cast<std::size_t>(index.row())];
  return &rows_[index.internalId() - 1].children[static_cast<std::size_t>(index.row())];
}

QModelIndex EvaluationResultModel::index(int row, int column, const QModelIndex &parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, quintptr(0));
  if (parent.internalId() != 0) return {};  // seeds and diagnostics have no children
  return createIndex(row, column, quintptr(parent.row() + 1));
}

QModelIndex EvaluationResultModel::parent(const QModelIndex &child) const {
  if (!child.isValid() || child.internalId() == 0) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, quintptr(0));
}

int EvaluationResultModel::rowCount(const QModelIndex &parent) const {
  if (!parent.isValid()) return static_cast<int>(rows_.size());
  if (parent.column() != 0 || parent.internalId() != 0) return 0;
  return static_cast<int>(rows_[static_cast<std::size_t>(parent.row())].children.size());
}

int EvaluationResultModel::columnCount(const QModelIndex &) const {
  return ColumnCount;
}

QVariant EvaluationResultModel::data(const QModelIndex &index, int role) const {
  const Row *row = rowAt(index);
  if (!row) return {};
  const auto column = static_cast<std::size_t>(index.column());
  switch (role) {
    case Qt::DisplayRole:
      return row->text[column];
    case Qt::ToolTipRole:
      return row->tip[column].isEmpty() ? QVariant() : QVariant(row->tip[column]);
    case Qt::ForegroundRole:
      if (index.column() == OutcomeColumn) return QBrush(toneColour(row->tone));
      if (index.column() == ChecksColumn && !row->text[column].isEmpty())
        return QBrush(toneColour(OutcomeTone::Bad));
      return {};
    case KindRole:
      return static_cast<int>(row->kind);
    case OutcomeRole:
      return row->outcome;
    default:
      return {};
  }
}

QVariant EvaluationResultModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case NameColumn:
      return tr("Configuration / seed");
    case OutcomeColumn:
      return tr("Outcome");
    case DetailColumn:
      return tr("Details");
    case LaunchColumn:
      return tr("Launch");
    case OccupancyColumn:
      return tr("Occupancy");
    case TimeColumn:
      return tr("Time (median)");
    case SpeedupColumn:
      return tr("Speedup");
    case TorchColumn:
      return tr("vs PyTorch");
    case ErrorColumn:
      return tr("Max errors");
    case MismatchColumn:
      return tr("First mismatches");
    case ChecksColumn:
      return tr("Checks");
    default:
      return {};
  }
}

}  // namespace kwb::ui
