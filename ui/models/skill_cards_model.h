#pragma once
// The Skills view's list: a row per skill card the filters let through (status, a case its scope
// covers, text in its id, intent or anchor), with its status, its measured gain, how much evidence
// it has and its scope. Filled from a read of the skill library (SkillLibraryService::snapshot).
#include <vector>

#include <QAbstractTableModel>

#include "core/lineage/skill_card.h"

namespace kwb::ui {

class SkillCardsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { CardColumn, StatusColumn, GainColumn, EvidenceColumn, ScopeColumn, ColumnCount };
  enum Role { IdRole = Qt::UserRole + 1 };

  explicit SkillCardsModel(QObject *parent = nullptr);

  struct Filter {
    QString status;     // "proposed", "admitted", ...; empty: any
    QString scopeCase;  // a case the card's scope covers (wildcards on the card's side); empty: any
    QString text;       // in the id, intent or anchor, any case; empty: any
  };
  // The library's cards, and which of them to show.
  void setCards(const std::vector<kwb::SkillCard> &cards, const Filter &filter);

  const kwb::SkillCard *cardAt(int row) const;
  int rowOf(const QString &id) const;  // -1 when the card is not shown

  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<kwb::SkillCard> cards_;
};

}  // namespace kwb::ui
