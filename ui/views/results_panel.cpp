#include "ui/views/results_panel.h"

#include <algorithm>

#include <QDateTime>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QResizeEvent>
#include <QStringList>
#include <QStyledItemDelegate>
#include <QTreeView>
#include <QVBoxLayout>

#include "ui/models/evaluation_result_model.h"
#include "ui/models/outcome_style.h"

namespace kwb::ui {

namespace {

// Each cell wraps at its column's width and its row is as tall as the tallest cell (QTreeView
// works a row's height out without the columns' widths, so the delegate does it with them). Its
// width, for resizeColumnToContents, stays the text's on one line.
class WrappingDelegate : public QStyledItemDelegate {
 public:
  explicit WrappingDelegate(QTreeView *view) : QStyledItemDelegate(view), view_(view) {}
  QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override {
    const QSize line = QStyledItemDelegate::sizeHint(option, index);
    int width = view_->header()->sectionSize(index.column());
    if (index.column() == 0) {  // the branch's indentation is not the cell's
      int depth = view_->rootIsDecorated() ? 1 : 0;
      for (QModelIndex p = index.parent(); p.isValid(); p = p.parent()) ++depth;
      width -= depth * view_->indentation();
    }
    if (width <= 0 || line.width() <= width) return line;
    QStyleOptionViewItem o(option);
    o.features |= QStyleOptionViewItem::WrapText;
    o.rect = QRect(0, 0, width, 1);
    return {line.width(), std::max(line.height(), QStyledItemDelegate::sizeHint(o, index).height())};
  }

 protected:
  void initStyleOption(QStyleOptionViewItem *option, const QModelIndex &index) const override {
    QStyledItemDelegate::initStyleOption(option, index);
    option->features |= QStyleOptionViewItem::WrapText;
  }

 private:
  QTreeView *view_;
};

// Horizontal space a cell's or a header's text needs around it.
constexpr int kCellPadding = 10, kHeaderPadding = 14;

// The widest word of `text`: the least width at which it wraps without breaking a word.
int widestWord(const QFontMetrics &metrics, const QString &text) {
  int most = 0;
  for (const QString &word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) most = std::max(most, metrics.horizontalAdvance(word));
  return most;
}

// A header whose labels wrap at their sections' widths ("Configuration / seed" on two lines in
// a narrow dock, not cut), as tall as the most lines one needs.
class WrappingHeader : public QHeaderView {
 public:
  explicit WrappingHeader(QWidget *parent) : QHeaderView(Qt::Horizontal, parent) {
    setSectionsMovable(true);  // as a tree view's own header
    setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  }
  QSize sizeHint() const override {
    QSize size = QHeaderView::sizeHint();
    int lines = 1;
    for (int i = 0; i < count(); ++i)
      if (!isSectionHidden(i)) lines = std::max(lines, linesOf(i));
    size.setHeight(std::max(size.height(), lines * fontMetrics().lineSpacing() + 8));
    return size;
  }

 protected:
  void paintSection(QPainter *painter, const QRect &rect, int logical) const override {
    if (!rect.isValid()) return;
    QStyleOptionHeader opt;
    initStyleOption(&opt);
    opt.rect = rect;
    opt.section = logical;
    opt.text.clear();  // the section as the style draws it, the label drawn here, wrapped
    painter->save();
    style()->drawControl(QStyle::CE_Header, &opt, painter, this);
    painter->restore();
    painter->drawText(rect.adjusted(kHeaderPadding / 2, 2, -kHeaderPadding / 2, -2),
                      Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap, label(logical));
  }

 private:
  QString label(int logical) const {
    return model() ? model()->headerData(logical, orientation(), Qt::DisplayRole).toString() : QString();
  }
  int linesOf(int logical) const {
    const int width = std::max(1, sectionSize(logical) - kHeaderPadding);
    return fontMetrics().boundingRect(QRect(0, 0, width, 10000), Qt::TextWordWrap, label(logical)).height() /
           std::max(1, fontMetrics().lineSpacing());
  }
};

}  // namespace

ResultsPanel::ResultsPanel(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("resultsPanel"));
  headline_ = new QLabel(this);
  headline_->setObjectName(QStringLiteral("resultsHeadline"));
  headline_->setWordWrap(true);
  headline_->setTextFormat(Qt::PlainText);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = headline_->font();
  bold.setBold(true);
  headline_->setFont(bold);
  details_ = new QLabel(this);
  details_->setObjectName(QStringLiteral("resultsDetails"));
  details_->setWordWrap(true);
  details_->setTextFormat(Qt::PlainText);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setStyleSheet(QStringLiteral("color: #6b7280;"));

  model_ = new EvaluationResultModel(this);
  view_ = new QTreeView(this);
  view_->setObjectName(QStringLiteral("resultsView"));
  view_->setHeader(new WrappingHeader(view_));
  view_->setModel(model_);
  view_->setUniformRowHeights(false);  // a long detail wraps onto more lines
  view_->setWordWrap(true);
  view_->setItemDelegate(new WrappingDelegate(view_));
  view_->setAlternatingRowColors(true);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->header()->setStretchLastSection(false);
  view_->header()->setMinimumSectionSize(36);
  // Widths a person sets hold until the next run, dock resize or row opened; the rows follow.
  connect(view_->header(), &QHeaderView::sectionResized, this, [this] {
    if (!fitting_) view_->doItemsLayout();
  });
  view_->viewport()->installEventFilter(this);
  // A run shown with no rows (a Case from the experience memory keeps its numbers, not its
  // compile and configurations) says so in the tree's place, not an empty table.
  emptyNote_ = new QLabel(view_->viewport());
  emptyNote_->setObjectName(QStringLiteral("resultsEmptyNote"));
  emptyNote_->setWordWrap(true);
  emptyNote_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  emptyNote_->setStyleSheet(QStringLiteral("color: #6b7280;"));
  emptyNote_->setAttribute(Qt::WA_TransparentForMouseEvents);
  emptyNote_->hide();
  // A row opened or closed shows other text: the columns fit it.
  connect(view_, &QTreeView::expanded, this, [this] {
    if (!fitting_) fitColumns();
  });
  connect(view_, &QTreeView::collapsed, this, [this] {
    if (!fitting_) fitColumns();
  });
  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 0);
  layout->setSpacing(4);
  layout->addWidget(headline_);
  layout->addWidget(details_);
  layout->addWidget(view_, 1);
  clear();
}

void ResultsPanel::clear() {
  run_ = EvaluationRun();
  fromHistory_ = false;
  model_->clear();
  setEmptyNote(QString());
  headline_->setText(tr("No run yet"));
  headline_->setStyleSheet(QString());
  details_->setText(
      tr("Run (Ctrl+R) compiles the kernel in the editor and checks it against the task's reference."));
  fitColumns();
}

void ResultsPanel::showRunning(const QString &taskName, const QString &sourceName) {
  run_ = EvaluationRun();
  fromHistory_ = false;
  model_->clear();
  setEmptyNote(QString());
  headline_->setText(tr("Running %1…").arg(QFileInfo(sourceName).fileName()));
  headline_->setStyleSheet(QString());
  details_->setText(tr("Task %1").arg(taskName));
  fitColumns();
}

void ResultsPanel::showRun(const EvaluationRun &run, bool fromHistory) {
  run_ = run;
  fromHistory_ = fromHistory;
  const QString outcome = outcomeText(run.outcome);
  headline_->setText(run.message.isEmpty() ? outcome : outcome + QStringLiteral(": ") + run.message);
  headline_->setStyleSheet(QStringLiteral("color: %1;").arg(runColour(run.outcome).name()));

  QStringList facts;
  facts << run.taskName << QFileInfo(run.sourceName).fileName();
  if (!run.arch.isEmpty()) facts << run.arch;
  facts << (run.device.isEmpty() ? tr("no GPU") : run.device);
  const QString sandbox = run.result ? QString::fromStdString(run.result->sandbox) : QString();
  if (sandbox == QLatin1String("none")) facts << tr("UNSANDBOXED (the kernel ran without isolation)");
  else if (!sandbox.isEmpty()) facts << tr("sandbox %1").arg(sandbox);
  if (run.result) facts << tr("%1 s").arg(run.result->seconds, 0, 'f', 2);
  if (run.result && run.result->sanitize) facts << tr("sanitizer: %1").arg(QString::fromStdString(run.result->sanitize->summary()));
  const QDateTime started = QDateTime::fromString(run.startedAt, Qt::ISODateWithMs);
  if (started.isValid()) facts << started.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
  if (fromHistory) facts << tr("from the history");
  facts.removeAll(QString());
  details_->setText(facts.join(QStringLiteral(" · ")));

  if (run.result) model_->setResult(*run.result);
  else model_->clear();
  setEmptyNote(model_->rowCount() == 0 ? tr("Only the outcome above was kept for this run: it has no compile or "
                                            "per-configuration rows to show.")
                                       : QString());
  // Open what needs reading: diagnostics, and configurations that did not pass.
  fitting_ = true;  // the columns fit once, after
  for (int row = 0; row < model_->rowCount(); ++row) {
    const QModelIndex index = model_->index(row, 0);
    const QString rowOutcome = index.data(EvaluationResultModel::OutcomeRole).toString();
    const bool fine = rowOutcome == QLatin1String("correct") || rowOutcome == QLatin1String("not-run") ||
                      rowOutcome == QLatin1String("cancelled");
    const bool compileRow =
        index.data(EvaluationResultModel::KindRole).toInt() == int(EvaluationResultModel::Kind::Compile);
    view_->setExpanded(index, compileRow || !fine);
  }
  fitting_ = false;
  fitColumns();
}

bool ResultsPanel::eventFilter(QObject *watched, QEvent *event) {
  if (watched == view_->viewport() && event->type() == QEvent::Resize) {
    const auto *resize = static_cast<QResizeEvent *>(event);
    if (resize->size().width() != resize->oldSize().width()) fitColumns();
    placeEmptyNote();
  }
  return QWidget::eventFilter(watched, event);
}

void ResultsPanel::setEmptyNote(const QString &text) {
  emptyNote_->setText(text);
  emptyNote_->setVisible(!text.isEmpty());
  placeEmptyNote();
}

void ResultsPanel::placeEmptyNote() {
  if (emptyNote_->isHidden()) return;
  const int width = std::max(60, view_->viewport()->width() - 16);
  emptyNote_->setGeometry(8, 8, width, emptyNote_->heightForWidth(width));
}

QString ResultsPanel::emptyNote() const { return emptyNote_->isHidden() ? QString() : emptyNote_->text(); }

void ResultsPanel::fitColumns() {
  // The columns the run filled, each as wide as its text on one line when the dock has the room;
  // when it has not, the widest give way first, their text (and header) wrapping onto more lines,
  // down to their longest word, so that every column stays in view: launch and occupancy are not
  // pushed off the side by a long detail. Columns nothing fills are hidden (a compile-only run
  // has no times, errors or checks); a person's own widths hold until the next run or resize.
  fitting_ = true;
  const int columns = EvaluationResultModel::ColumnCount;
  const QFontMetrics metrics = view_->fontMetrics();
  std::vector<int> natural(columns, 0), least(columns, 0);
  for (int c = 0; c < columns; ++c) {
    const QString title = model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    natural[c] = metrics.horizontalAdvance(title) + kHeaderPadding;
    least[c] = std::max(40, widestWord(metrics, title) + kHeaderPadding);
  }
  std::vector<bool> filled(columns, false);
  std::vector<std::pair<QModelIndex, int>> pending{{QModelIndex(), view_->rootIsDecorated() ? 1 : 0}};
  while (!pending.empty()) {
    const auto [parent, depth] = pending.back();
    pending.pop_back();
    for (int row = 0; row < model_->rowCount(parent); ++row) {
      for (int c = 0; c < columns; ++c) {
        const QString text = model_->index(row, c, parent).data().toString();
        if (text.isEmpty()) continue;
        filled[c] = true;
        const int indent = c == 0 ? depth * view_->indentation() : 0;
        natural[c] = std::max(natural[c], indent + metrics.horizontalAdvance(text) + kCellPadding);
        least[c] = std::max(least[c], indent + widestWord(metrics, text) + kCellPadding);
      }
      const QModelIndex first = model_->index(row, 0, parent);
      if (model_->rowCount(first) > 0 && view_->isExpanded(first)) pending.push_back({first, depth + 1});
    }
  }
  const bool empty = model_->rowCount() == 0;
  for (int c = 0; c < columns; ++c) {
    const bool show = filled[c] || c == EvaluationResultModel::NameColumn || c == EvaluationResultModel::OutcomeColumn ||
                      (empty && c == EvaluationResultModel::DetailColumn);
    view_->setColumnHidden(c, !show);
    if (!show) natural[c] = least[c] = 0;
    least[c] = std::min(least[c], natural[c]);
  }
  // The largest width W that every column may keep (min(natural, max(least, W))) and all fit.
  const int room = view_->viewport()->width();
  int cap = *std::max_element(natural.begin(), natural.end());
  auto sum = [&](int w) {
    int total = 0;
    for (int c = 0; c < columns; ++c) total += std::min(natural[c], std::max(least[c], w));
    return total;
  };
  if (room > 0 && sum(cap) > room) {
    int low = 0, high = cap;
    while (low < high) {
      const int mid = (low + high + 1) / 2;
      if (sum(mid) <= room) low = mid;
      else high = mid - 1;
    }
    cap = low;
  }
  for (int c = 0; c < columns; ++c)
    if (natural[c] > 0) view_->header()->resizeSection(c, std::min(natural[c], std::max(least[c], cap)));
  fitting_ = false;
  view_->doItemsLayout();
}

void ResultsPanel::onTaskChanged(const WorkbenchContext &context) {
  if (!context.selection()) clear();
}

void ResultsPanel::onSelectionChanged(const WorkbenchContext &context) {
  const auto &selection = context.selection();
  if (!selection) {
    clear();
    return;
  }
  if (!selection->hasRun()) return;  // a lineage step, or a candidate whose run is being read: what ran stays
  showRun(selection->run, selection->origin == CandidateSelection::Origin::History);
}

QString ResultsPanel::summaryText() const {
  return headline_->text() + QLatin1Char('\n') + details_->text();
}

}  // namespace kwb::ui
