#include "ui/views/diff_dialog.h"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QVBoxLayout>

#include <Qsci/qscilexerdiff.h>
#include <Qsci/qsciscintilla.h>

#include "core/text/line_diff.h"

namespace kwb::ui {

DiffDialog::DiffDialog(const QString &oldText, const QString &oldName, const QString &newText, const QString &newName,
                       QWidget *parent)
    : QDialog(parent) {
  setObjectName(QStringLiteral("diffDialog"));
  setWindowTitle(tr("%1 \u2192 %2").arg(oldName, newName));
  const auto edits = kwb::lineDiff(oldText.toStdString(), newText.toStdString());
  int removed = 0, added = 0;
  for (const auto &e : edits) {
    if (e.kind == kwb::LineEdit::Kind::Removed) ++removed;
    if (e.kind == kwb::LineEdit::Kind::Added) ++added;
  }
  const std::string diff =
      kwb::unifiedDiff(oldText.toStdString(), newText.toStdString(), oldName.toStdString(), newName.toStdString());

  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("diffSummary"));
  summary_->setText(removed == 0 && added == 0 ? tr("No differences")
                                               : tr("%n line(s) removed, ", nullptr, removed) + tr("%n added", nullptr, added));
  view_ = new QsciScintilla(this);
  view_->setObjectName(QStringLiteral("diffView"));
  auto *lexer = new QsciLexerDiff(view_);
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  lexer->setDefaultFont(mono);
  lexer->setFont(mono);
  view_->setLexer(lexer);
  view_->setText(QString::fromStdString(diff));
  view_->setReadOnly(true);
  view_->setMarginWidth(0, 0);
  auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto *layout = new QVBoxLayout(this);
  layout->addWidget(summary_);
  layout->addWidget(view_, 1);
  layout->addWidget(buttons);
  resize(760, 560);
}

QString DiffDialog::diffText() const { return view_->text(); }
QString DiffDialog::summary() const { return summary_->text(); }

}  // namespace kwb::ui
