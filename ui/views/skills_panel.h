#pragma once
// The Skills panel (issue 18): the cards of the skill library for review. A list filtered by
// status, operator class (the cards' scope, wildcards on the card's side) and text; the selected
// card rendered with every field (intent, anchor, preconditions, scope, features, the measured
// gain, each piece of evidence linked to its lineage step, risk, the verification log, the
// carrier and the rest of its body) and its audit trail; Approve, Reject (with a reason) and
// Edit (its SKILL.md text, checked before it is stored; never its status, evidence or verification
// log, which only review and the gate change) recorded with who and when; Try on current
// kernel (a gated application of the card to the editor's kernel: SkillLibraryService::tryCard),
// with its progress and a Cancel.
#include <QWidget>

#include "ui/workbench_context.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTextBrowser;
class QTreeView;

namespace kwb {
struct SkillCard;
}

namespace kwb::ui {

class SkillCardsModel;
class SkillLibraryService;

// In the window's context: a card's evidence link selects its lineage step there, opened.
class SkillsPanel : public QWidget, public WorkbenchView {
  Q_OBJECT

 public:
  explicit SkillsPanel(QWidget *parent = nullptr);
  void attach(SkillLibraryService *service);

  bool selectCard(const QString &id);
  QString currentCard() const;
  // Filters: status ("" for all, "proposed", "admitted", "approved", "rejected"), operator class, text.
  void setFilters(const QString &status, const QString &scopeCase, const QString &text);
  int visibleCards() const;
  QString cardText() const;   // the rendered card, as plain text
  QString cardHtml() const;
  QString auditText() const;  // the shown card's audit trail (Markdown)

  // The review actions, as the buttons do them (the reason and the who given, no dialog).
  void approve(const QString &who);
  void reject(const QString &who, const QString &why);
  void editAs(const QString &who, const QString &skillMarkdown);

  QTreeView *list() const { return list_; }
  SkillCardsModel *cards() const { return cards_; }
  QTextBrowser *view() const { return view_; }
  QPushButton *approveButton() const { return approve_; }
  QPushButton *rejectButton() const { return reject_; }
  QPushButton *editButton() const { return edit_; }
  QPushButton *tryButton() const { return try_; }
  QPushButton *importButton() const { return import_; }
  QPushButton *exportButton() const { return export_; }
  QPushButton *cancelTryButton() const { return cancelTry_; }
  // Who Approve, Reject and Edit record in a card's audit trail ("reviewer:NAME"); empty: the
  // buttons wait for a name. The window keeps it between runs (reviewerChanged).
  QLineEdit *reviewerField() const { return reviewer_; }
  void setReviewer(const QString &name);
  QString message() const;  // the line under the buttons
  // A line under the buttons, in red when `problem`.
  void showMessage(const QString &text, bool problem = false);

 signals:
  // An evidence link was followed: show this step of this lineage.
  void lineageStepRequested(const QString &lineage, int step);
  // "Try on current kernel" was pressed for this card: the window knows the kernel and the model.
  void tryRequested(const QString &id);
  void reviewerChanged(const QString &name);

 private:
  void reload();
  void showCard();
  void updateButtons();  // what the card and the reviewer name allow
  void render(const QString &markdown);  // the card view's text, drawn when it changed
  const kwb::SkillCard *shownCard() const;
  QString reviewer() const;

  SkillLibraryService *service_ = nullptr;
  QComboBox *status_ = nullptr;
  QLineEdit *scope_ = nullptr, *text_ = nullptr, *reviewer_ = nullptr;
  QTreeView *list_ = nullptr;
  SkillCardsModel *cards_ = nullptr;
  QTextBrowser *view_ = nullptr;
  QLabel *message_ = nullptr;
  QString auditMarkdown_;  // the shown card's audit trail
  QString shownMarkdown_;  // what the card view shows
  QPushButton *import_ = nullptr, *export_ = nullptr;
  QPushButton *approve_ = nullptr, *reject_ = nullptr, *edit_ = nullptr, *try_ = nullptr, *cancelTry_ = nullptr;
  QString pending_;  // a card asked for that the list did not show yet
};

}  // namespace kwb::ui
