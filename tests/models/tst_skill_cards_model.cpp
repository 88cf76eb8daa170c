// SkillCardsModel alone: the library's cards through the Skills view's filters (status, a case the
// card's scope covers with its wildcards, text in id, intent or anchor), a row per card with its
// status, measured gain (the median of its successful evidence), evidence count and scope.
#include <QAbstractItemModelTester>
#include <QtTest>

#include "ui/models/skill_cards_model.h"

using kwb::ui::SkillCardsModel;

namespace {

kwb::SkillCard card(const std::string &id, kwb::CardStatus status, std::vector<std::string> cases,
                    std::vector<double> gains) {
  kwb::SkillCard c;
  c.id = id;
  c.intent = "Reduce " + id + " with fewer barriers";
  c.anchor = "the reduction loop";
  c.status = status;
  c.scope.cases = std::move(cases);
  for (double g : gains) {
    kwb::CardEvidence e;
    e.kind = "lineage-step";
    e.speedup = g;
    c.evidence.push_back(e);
  }
  return c;
}

}  // namespace

class TestSkillCardsModel : public QObject {
  Q_OBJECT

 private slots:
  void filtersAndColumns() {
    const std::vector<kwb::SkillCard> cards = {
        card("warp-shuffle", kwb::CardStatus::Admitted, {"softmax", "layernorm*"}, {1.5, 2.5, 2.0}),
        card("smem-tiling", kwb::CardStatus::Proposed, {"gemm"}, {}),
        card("vector-loads", kwb::CardStatus::Approved, {"*"}, {1.2}),
    };
    SkillCardsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCards(cards, {});
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), 5);
    QCOMPARE(model.headerData(SkillCardsModel::EvidenceColumn, Qt::Horizontal).toString(), QStringLiteral("Evidence"));
    QCOMPARE(model.index(0, SkillCardsModel::CardColumn).data().toString(), QStringLiteral("warp-shuffle"));
    QCOMPARE(model.index(0, SkillCardsModel::StatusColumn).data().toString(), QStringLiteral("admitted"));
    QCOMPARE(model.index(0, SkillCardsModel::GainColumn).data().toString(), QStringLiteral("\u00d72.00"));  // the median
    QCOMPARE(model.index(0, SkillCardsModel::EvidenceColumn).data().toString(), QStringLiteral("3"));
    QCOMPARE(model.index(0, SkillCardsModel::ScopeColumn).data().toString(), QStringLiteral("softmax, layernorm*"));
    QVERIFY(model.index(0, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("fewer barriers")));
    QVERIFY(model.index(1, SkillCardsModel::GainColumn).data().toString().isEmpty());  // nothing measured
    QCOMPARE(model.index(2, 0).data(SkillCardsModel::IdRole).toString(), QStringLiteral("vector-loads"));

    model.setCards(cards, {QStringLiteral("proposed"), {}, {}});
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.cardAt(0)->id, std::string("smem-tiling"));
    // The scope's wildcards are the card's: layernorm_fused is covered by "layernorm*" and "*".
    model.setCards(cards, {{}, QStringLiteral("layernorm_fused"), {}});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.rowOf(QStringLiteral("warp-shuffle")), 0);
    QCOMPARE(model.rowOf(QStringLiteral("vector-loads")), 1);
    QCOMPARE(model.rowOf(QStringLiteral("smem-tiling")), -1);
    model.setCards(cards, {{}, {}, QStringLiteral("REDUCTION LOOP")});  // the anchor, any case
    QCOMPARE(model.rowCount(), 3);
    model.setCards(cards, {{}, {}, QStringLiteral("tiling")});
    QCOMPARE(model.rowCount(), 1);
    model.setCards({}, {});
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(!model.cardAt(0));
  }
};

QTEST_MAIN(TestSkillCardsModel)
#include "tst_skill_cards_model.moc"
