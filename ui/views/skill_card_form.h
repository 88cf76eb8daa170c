#pragma once
// The Skills view's Edit: a skill card as a form. What a reviewer may change is a field: the intent,
// the anchor, one reason per precondition category (and any others, a line each), the scope, the
// features it requires, provides and conflicts with, and each section of its body (with a section
// added by name). What the card's record is (its id, status, evidence and verification log) is
// shown and cannot be changed here: Approve, Reject and the gate change it. Save gives the card
// with the form's fields (card()); the store checks it again.
#include <QDialog>
#include <QList>

#include "core/lineage/skill_card.h"

class QLineEdit;
class QPlainTextEdit;
class QTabWidget;

namespace kwb::ui {

class SkillCardForm : public QDialog {
  Q_OBJECT

 public:
  explicit SkillCardForm(const kwb::SkillCard &card, QWidget *parent = nullptr);

  // The stored card with the form's fields: its id, status, evidence and log as they were.
  kwb::SkillCard card() const;
  // A section added by name (the Add Section… button); false when the card has one of that name.
  bool addSection(const QString &heading);

 private:
  QPlainTextEdit *sectionEditor(const QString &text);

  kwb::SkillCard stored_;
  QLineEdit *intent_ = nullptr, *anchor_ = nullptr;
  QList<QLineEdit *> categories_;  // one per kPreconditionCategories
  QPlainTextEdit *otherPreconditions_ = nullptr;
  QLineEdit *cases_ = nullptr, *languages_ = nullptr, *platforms_ = nullptr;
  QLineEdit *requires_ = nullptr, *provides_ = nullptr, *conflicts_ = nullptr;
  QTabWidget *sections_ = nullptr;
  QList<kwb::CardSection> body_;          // the sections, in order (texts from the tabs on save)
  QList<QPlainTextEdit *> sectionEditors_;  // one per body_ entry
};

}  // namespace kwb::ui
