#include "ui/models/evaluation_result_model.h"

#include <algorithm>
#include <string>

#include <QBrush>
#include <QColor>
#include <QFileInfo>
#include <QStringList>

namespace kwb::ui {

namespace {

using nlohmann::json;
using Row = EvaluationResultModel::Row;
using Kind = EvaluationResultModel::Kind;
using Column = EvaluationResultModel::Column;

QString str(const json &object, const char *key) {
  const auto it = object.find(key);
  if (it == object.end()) return {};
  if (it->is_string()) return QString::fromStdString(it->get<std::string>());
  if (it->is_null()) return {};
  return QString::fromStdString(it->dump());
}

double num(const json &object, const char *key, double fallback = 0.0) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

bool flag(const json &object, const char *key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

const json &member(const json &object, const char *key) {
  static const json none;
  if (!object.is_object()) return none;
  const auto it = object.find(key);
  return it == object.end() ? none : *it;
}

// A JSON value (a number, or the exact text of an element) as it reads best.
QString valueText(const json &value) {
  if (value.is_string()) return QString::fromStdString(value.get<std::string>());
  if (value.is_number()) return QString::number(value.get<double>(), 'g', 7);
  if (value.is_null()) return {};
  return QString::fromStdString(value.dump());
}

QString figure(double value) {
  return QString::number(value, 'g', 3);
}

// "compile-error" -> "compile error"
QString outcomeText(const QString &outcome) {
  QString text = outcome;
  return text.replace(QLatin1Char('-'), QLatin1Char(' '));
}

QString dims(const json &array) {
  if (!array.is_array()) return {};
  QStringList parts;
  for (const json &d : array) parts << valueText(d);
  while (parts.size() > 1 && parts.last() == QLatin1String("1")) parts.removeLast();
  return parts.join(QStringLiteral("×"));
}

QString launchText(const json &launch) {
  if (!launch.is_object()) return {};
  QString text =
      QStringLiteral("grid %1 · block %2").arg(dims(member(launch, "grid")), dims(member(launch, "block")));
  const double shared = num(launch, "shared_bytes");
  if (shared > 0) text += QStringLiteral(" · %1 B shared").arg(shared, 0, 'f', 0);
  return text;
}

QString millis(double ms) {
  if (ms >= 100) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 1);
  if (ms >= 1) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 3);
  return QStringLiteral("%1 µs").arg(ms * 1000.0, 0, 'f', ms * 1000.0 >= 10 ? 1 : 2);
}

QString statsTip(const QString &who, const json &stats) {
  return QStringLiteral("%1: median %2, IQR %3, min %4, mean %5, %6 samples, spread %7%")
      .arg(who, millis(num(stats, "median_ms")), millis(num(stats, "iqr_ms")), millis(num(stats, "min_ms")),
           millis(num(stats, "mean_ms")))
      .arg(num(stats, "samples"), 0, 'f', 0)
      .arg(num(stats, "relative_spread") * 100.0, 0, 'f', 2);
}

Row runRow(const json &result) {
  Row row;
  row.kind = Kind::Run;
  row.outcome = str(result, "outcome");
  row.text[Column::NameColumn] = EvaluationResultModel::tr("run");
  row.text[Column::OutcomeColumn] = outcomeText(row.outcome);
  row.text[Column::DetailColumn] = str(result, "message");
  row.tip[Column::DetailColumn] = row.text[Column::DetailColumn];
  return row;
}

Row diagnosticRow(const json &d, const QString &prefix) {
  Row row;
  row.kind = Kind::Diagnostic;
  row.outcome = str(d, "severity");
  const QString file = QFileInfo(str(d, "file")).fileName();
  const int line = static_cast<int>(num(d, "line"));
  const int column = static_cast<int>(num(d, "column"));
  QString where = file.isEmpty() ? QString() : file;
  if (line > 0) where += QStringLiteral(":%1").arg(line);
  if (line > 0 && column > 0) where += QStringLiteral(":%1").arg(column);
  row.text[Column::NameColumn] = prefix + where;
  row.text[Column::OutcomeColumn] = row.outcome;
  row.text[Column::DetailColumn] = str(d, "message");
  row.tip[Column::DetailColumn] = str(d, "text");
  return row;
}

Row compileRow(const json &result) {
  const json &compile = member(result, "compile");
  Row row;
  row.kind = Kind::Compile;
  const bool ok = flag(compile, "ok");
  const QString outcome = str(result, "outcome");
  row.outcome = ok                                        ? QStringLiteral("ok")
                : outcome == QLatin1String("unsupported") ? outcome
                                                          : QStringLiteral("compile-error");
  row.text[Column::NameColumn] = EvaluationResultModel::tr("compile");
  row.text[Column::OutcomeColumn] = outcomeText(row.outcome);

  QStringList details;
  QStringList tips;
  for (const json &k : member(compile, "kernels")) {
    const double spill = num(k, "spill_store_bytes") + num(k, "spill_load_bytes");
    details << EvaluationResultModel::tr("%1: %2 registers, %3 B shared%4")
                   .arg(str(k, "name"))
                   .arg(num(k, "registers"), 0, 'f', 0)
                   .arg(num(k, "shared_static_bytes"), 0, 'f', 0)
                   .arg(spill > 0 ? EvaluationResultModel::tr(", %1 B spilled").arg(spill, 0, 'f', 0)
                                  : QString());
    tips << EvaluationResultModel::tr(
                "%1: %2 registers, %3 B static shared, %4 B constant, %5 B stack, %6/%7 B "
                "spill stores/loads")
                .arg(str(k, "name"))
                .arg(num(k, "registers"), 0, 'f', 0)
                .arg(num(k, "shared_static_bytes"), 0, 'f', 0)
                .arg(num(k, "constant_bytes"), 0, 'f', 0)
                .arg(num(k, "stack_frame_bytes"), 0, 'f', 0)
                .arg(num(k, "spill_store_bytes"), 0, 'f', 0)
                .arg(num(k, "spill_load_bytes"), 0, 'f', 0);
  }
  if (!ok) details.prepend(str(result, "message"));
  QStringList about;
  if (!str(compile, "form").isEmpty()) about << str(compile, "form");
  if (!str(compile, "toolkit").isEmpty())
    about << EvaluationResultModel::tr("CUDA %1").arg(str(compile, "toolkit"));
  if (flag(compile, "cache_hit"))
    about << EvaluationResultModel::tr("from the compile cache");
  else if (compile.contains("seconds"))
    about << EvaluationResultModel::tr("%1 s").arg(num(compile, "seconds"), 0, 'f', 2);
  row.text[Column::DetailColumn] = details.join(QStringLiteral("; "));
  row.tip[Column::DetailColumn] =
      (tips + QStringList{about.join(QStringLiteral(" · "))}).join(QLatin1Char('\n'));

  for (const json &d : member(compile, "diagnostics")) row.children.push_back(diagnosticRow(d, QString()));
  for (const json &d : member(result, "reference_diagnostics"))
    row.children.push_back(diagnosticRow(d, EvaluationResultModel::tr("reference ")));
  return row;
}

Row seedRow(const json &s) {
  Row row;
  row.kind = Kind::Seed;
  const bool passed = flag(s, "passed");
  row.outcome = passed ? QStringLiteral("passed") : QStringLiteral("failed");
  row.text[Column::NameColumn] = EvaluationResultModel::tr("seed %1").arg(valueText(member(s, "seed")));
  row.text[Column::OutcomeColumn] = row.outcome;
  row.text[Column::DetailColumn] = str(s, "summary");
  row.tip[Column::DetailColumn] = row.text[Column::DetailColumn];

  const json &outputs = member(s, "outputs");
  const bool several = outputs.is_array() && outputs.size() > 1;
  QStringList errors, errorTips, mismatches, mismatchTips, checks;
  for (const json &output : outputs) {
    const QString tensor = str(output, "tensor");
    const QString label = several ? tensor + QStringLiteral(": ") : QString();
    const json &c = member(output, "comparison");
    if (c.is_object()) {
      errors << label + EvaluationResultModel::tr("abs %1 · rel %2 · L2 %3")
                            .arg(figure(num(c, "max_abs_error")), figure(num(c, "max_rel_error")),
                                 figure(num(c, "relative_l2_error")));
      errorTips << EvaluationResultModel::tr(
                       "%1: max abs error %2, max rel error %3, relative L2 error %4; %5 of %6 "
                       "elements differ")
                       .arg(tensor, valueText(member(c, "max_abs_error")),
                            valueText(member(c, "max_rel_error")), valueText(member(c, "relative_l2_error")),
                            valueText(member(c, "mismatches")), valueText(member(c, "checked")));
      int shown = 0;
      for (const json &m : member(c, "first_mismatches")) {
        const json &coordinates = member(m, "coordinates");
        QStringList at;
        if (coordinates.is_array()) {
          for (const json &x : coordinates) at << valueText(x);
        } else {
          at << valueText(member(m, "index"));
        }
        const QString item = EvaluationResultModel::tr("%1[%2]: got %3, want %4")
                                 .arg(tensor, at.join(QStringLiteral(", ")), valueText(member(m, "got")),
                                      valueText(member(m, "want")));
        if (shown++ < 3) mismatches << item;
        mismatchTips << item;
      }
    }
    const double unwritten = num(member(output, "unwritten"), "count");
    if (unwritten > 0)
      checks << EvaluationResultModel::tr("%1%2 unwritten").arg(label).arg(unwritten, 0, 'f', 0);
  }
  if (checks.isEmpty() && num(s, "unwritten") > 0)
    checks << EvaluationResultModel::tr("%1 unwritten").arg(num(s, "unwritten"), 0, 'f', 0);
  if (flag(s, "race")) checks << EvaluationResultModel::tr("race");
  if (flag(s, "inputs_modified")) checks << EvaluationResultModel::tr("inputs modified");
  row.text[Column::ErrorColumn] = errors.join(QStringLiteral("; "));
  row.tip[Column::ErrorColumn] = errorTips.join(QLatin1Char('\n'));
  row.text[Column::MismatchColumn] = mismatches.join(QStringLiteral("; "));
  row.tip[Column::MismatchColumn] = mismatchTips.join(QLatin1Char('\n'));
  row.text[Column::ChecksColumn] = checks.join(QStringLiteral(", "));
  return row;
}

Row configRow(const json &c) {
  Row row;
  row.kind = Kind::Config;
  row.outcome = str(c, "outcome");
  row.text[Column::NameColumn] = str(c, "config");
  row.text[Column::OutcomeColumn] = outcomeText(row.outcome);
  const QString errorName = str(c, "error_name");
  row.text[Column::DetailColumn] =
      errorName.isEmpty() ? str(c, "message") : errorName + QStringLiteral(": ") + str(c, "message");
  row.tip[Column::DetailColumn] = row.text[Column::DetailColumn];
  row.text[Column::LaunchColumn] = launchText(member(c, "candidate_launch"));
  row.tip[Column::LaunchColumn] =
      EvaluationResultModel::tr("candidate: %1\nreference: %2")
          .arg(launchText(member(c, "candidate_launch")), launchText(member(c, "reference_launch")));

  const json &occupancy = member(c, "occupancy");
  if (occupancy.is_object()) {
    if (!str(occupancy, "error").isEmpty()) {
      row.text[Column::OccupancyColumn] = EvaluationResultModel::tr("not launchable");
      row.tip[Column::OccupancyColumn] = str(occupancy, "error");
    } else {
      row.text[Column::OccupancyColumn] = EvaluationResultModel::tr("%1% · %2 blocks/SM")
                                              .arg(num(occupancy, "occupancy") * 100.0, 0, 'f', 0)
                                              .arg(num(occupancy, "active_blocks_per_sm"), 0, 'f', 0);
      row.tip[Column::OccupancyColumn] = EvaluationResultModel::tr("%1\nlimited by %2")
                                             .arg(str(occupancy, "explanation"), str(occupancy, "limiter"));
    }
  }

  const json &timing = member(c, "timing");
  if (timing.is_object()) {
    if (flag(timing, "ok")) {
      const json &candidate = member(timing, "candidate");
      row.text[Column::TimeColumn] =
          EvaluationResultModel::tr("%1 (IQR %2)")
              .arg(millis(num(candidate, "median_ms")), millis(num(candidate, "iqr_ms")));
      row.tip[Column::TimeColumn] =
          QStringList{statsTip(EvaluationResultModel::tr("candidate"), candidate),
                      statsTip(EvaluationResultModel::tr("reference"), member(timing, "reference")),
                      EvaluationResultModel::tr("timer %1, stopped: %2")
                          .arg(str(timing, "timer"), str(timing, "stop_reason"))}
              .join(QLatin1Char('\n'));
      row.text[Column::SpeedupColumn] = QStringLiteral("%1×").arg(num(timing, "speedup"), 0, 'f', 2);
      row.tip[Column::SpeedupColumn] = EvaluationResultModel::tr("reference median / candidate median");
    } else {
      row.text[Column::TimeColumn] = EvaluationResultModel::tr("not timed");
      row.tip[Column::TimeColumn] = str(timing, "error");
    }
    QStringList checks, checkTips;
    if (flag(timing, "suspicious")) {
      checks << EvaluationResultModel::tr("suspicious");
      checkTips << str(timing, "suspicious_reason");
    }
    if (num(timing, "throttled_samples") > 0) {
      checks << EvaluationResultModel::tr("%1 throttled").arg(num(timing, "throttled_samples"), 0, 'f', 0);
      checkTips << EvaluationResultModel::tr("samples slowed by power or heat (NVML)");
    }
    for (const json &finding : member(timing, "findings")) {
      checks << str(finding, "reason");
      checkTips << str(finding, "message");
    }
    row.text[Column::ChecksColumn] = checks.join(QStringLiteral(", "));
    row.tip[Column::ChecksColumn] = checkTips.join(QLatin1Char('\n'));
  }
  for (const json &s : member(c, "seeds")) row.children.push_back(seedRow(s));
  return row;
}

QColor outcomeColour(const QString &outcome) {
  static const QStringList good = {QStringLiteral("correct"), QStringLiteral("passed"), QStringLiteral("ok")};
  static const QStringList quiet = {QStringLiteral("not-run"), QStringLiteral("cancelled"),
                                    QStringLiteral("note")};
  static const QStringList warn = {QStringLiteral("warning"), QStringLiteral("unsupported"),
                                   QStringLiteral("timeout")};
  if (good.contains(outcome)) return QColor(0x15, 0x80, 0x3d);
  if (quiet.contains(outcome)) return QColor(0x6b, 0x72, 0x80);
  if (warn.contains(outcome)) return QColor(0xb4, 0x53, 0x09);
  return QColor(0xb9, 0x1c, 0x1c);
}

}  // namespace

EvaluationResultModel::EvaluationResultModel(QObject *parent) : QAbstractItemModel(parent) {}

void EvaluationResultModel::setResult(const nlohmann::json &result) {
  std::vector<Row> rows;
  if (result.is_object()) {
    if (result.contains("compile")) rows.push_back(compileRow(result));
    const json &configs = member(result, "configs");
    for (const json &c : configs) rows.push_back(configRow(c));
    const bool compileSaysIt = !rows.empty() && rows.front().outcome != QLatin1String("ok");
    if ((!configs.is_array() || configs.empty()) && !compileSaysIt) rows.push_back(runRow(result));
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
      if (index.column() == OutcomeColumn) return QBrush(outcomeColour(row->outcome));
      if (index.column() == ChecksColumn && !row->text[column].isEmpty())
        return QBrush(outcomeColour(QString()));
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
