#include "ui/models/skill_cards_model.h"

#include <QStringList>

#include "core/lineage/skill_library.h"

namespace kwb::ui {

namespace {

QString q(const std::string &s) { return QString::fromStdString(s); }

QString scopeText(const kwb::SkillCard &c) {
  QStringList cases;
  for (const auto &s : c.scope.cases) cases << q(s);
  return cases.join(QStringLiteral(", "));
}

bool passes(const kwb::SkillCard &c, const SkillCardsModel::Filter &f) {
  if (!f.status.isEmpty() && q(kwb::toString(c.status)) != f.status) return false;
  const std::string scope = f.scopeCase.trimmed().toStdString();
  if (!scope.empty() && !kwb::anyWildcardMatches(c.scope.cases, scope)) return false;
  const QString text = f.text.trimmed();
  return text.isEmpty() ||
         QString(q(c.id) + QLatin1Char('\n') + q(c.intent) + QLatin1Char('\n') + q(c.anchor)).contains(text, Qt::CaseInsensitive);
}

}  // namespace

SkillCardsModel::SkillCardsModel(QObject *parent) : QAbstractTableModel(parent) {}

void SkillCardsModel::setCards(const std::vector<kwb::SkillCard> &cards, const Filter &filter) {
  beginResetModel();
  cards_.clear();
  for (const auto &c : cards)
    if (passes(c, filter)) cards_.push_back(c);
  endResetModel();
}

const kwb::SkillCard *SkillCardsModel::cardAt(int row) const {
  return row >= 0 && row < static_cast<int>(cards_.size()) ? &cards_[static_cast<std::size_t>(row)] : nullptr;
}

int SkillCardsModel::rowOf(const QString &id) const {
  for (std::size_t i = 0; i < cards_.size(); ++i)
    if (q(cards_[i].id) == id) return static_cast<int>(i);
  return -1;
}

int SkillCardsModel::rowCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : static_cast<int>(cards_.size()); }

int SkillCardsModel::columnCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SkillCardsModel::data(const QModelIndex &index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const kwb::SkillCard &c = cards_[static_cast<std::size_t>(index.row())];
  if (role == IdRole) return q(c.id);
  if (role == Qt::TextAlignmentRole)
    return index.column() == GainColumn || index.column() == EvidenceColumn ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
  if (role == Qt::ToolTipRole) {
    if (index.column() == CardColumn) return QStringLiteral("%1\n%2").arg(q(c.id), q(c.intent));
    if (index.column() == ScopeColumn) return scopeText(c);
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case CardColumn: return q(c.id);
    case StatusColumn: return q(kwb::toString(c.status));
    case GainColumn: return c.measuredSpeedup() > 0 ? QStringLiteral("\u00d7%1").arg(c.measuredSpeedup(), 0, 'f', 2) : QString();
    case EvidenceColumn: return QString::number(c.evidence.size());
    case ScopeColumn: return scopeText(c);
    default: return {};
  }
}

QVariant SkillCardsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case CardColumn: return tr("Card");
    case StatusColumn: return tr("Status");
    case GainColumn: return tr("Gain");
    case EvidenceColumn: return tr("Evidence");
    case ScopeColumn: return tr("Scope");
    default: return {};
  }
}

}  // namespace kwb::ui
