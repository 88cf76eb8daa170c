// Help ▸ User Guide (issue 48 item 7): the guide the workbench ships (resources/guide), found from
// the build tree, every chapter index.md lists read and every chapter file listed; the view alone:
// the contents first, a search that narrows the chapters to those holding every word and marks the
// words, a search that finds nothing says so, a link to another chapter follows, the pictures load;
// then in the window, F1 opens the one guide window.
#include <QtTest>

#include <QAction>
#include <QDir>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QScrollBar>
#include <QSplitter>
#include <QTextBrowser>

#include "isolated_home.h"
#include "signal_wait.h"
#include "window_parts.h"
#include "ui/main_window.h"
#include "ui/views/help_view.h"

using namespace kwb::ui;

class TestHelpView : public QObject {
  Q_OBJECT

  IsolatedHome home_;

 private slots:
  void theGuideIsShippedWhole() {
    const QString dir = guideDir();
    QVERIFY2(!dir.isEmpty(), "no guide found from the build tree");
    QCOMPARE(QDir(dir).canonicalPath(), QDir(QStringLiteral(KWB_SOURCE_DIR "/resources/guide")).canonicalPath());
    QString problem;
    const auto chapters = readGuide(dir, problem);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
    QVERIFY(chapters.size() >= 10);
    QCOMPARE(chapters.front().file, QStringLiteral("index.md"));
    QStringList listed;
    for (const GuideChapter &c : chapters) {
      listed << c.file;
      QVERIFY2(c.text.startsWith(QLatin1String("# ")), qPrintable(c.file));  // a title first
    }
    // No chapter file that index.md forgets.
    for (const QString &f : QDir(dir).entryList({QStringLiteral("*.md")}, QDir::Files))
      QVERIFY2(listed.contains(f), qPrintable(f + " is not listed in index.md"));
    QCOMPARE(guideHits(QStringLiteral("CUPTI and cupti, nvcc"), {QStringLiteral("cupti")}), 2);
    QCOMPARE(guideHits(QStringLiteral("CUPTI and nvcc"), {QStringLiteral("cupti"), QStringLiteral("nvrtc")}), 0);

    QString none;
    QVERIFY(readGuide(QString(), none).isEmpty());
    QVERIFY(none.contains(QLatin1String("KWB_GUIDE_DIR")));
  }

  void searchesFollowsAndShowsPictures() {
    HelpView view;
    view.show();
    QCOMPARE(view.currentChapter(), QStringLiteral("index.md"));
    const int all = static_cast<int>(view.listedChapters().size());
    QCOMPARE(all, static_cast<int>(view.chapters().size()));

    view.search(QStringLiteral("compute-sanitizer"));
    const QStringList hits = view.listedChapters();
    QVERIFY(!hits.isEmpty() && hits.size() < all);
    for (const GuideChapter &c : view.chapters())
      QCOMPARE(hits.contains(c.file), c.text.contains(QLatin1String("compute-sanitizer"), Qt::CaseInsensitive));
    QVERIFY(hits.contains(view.currentChapter()));  // the index holds none: the first that does is shown
    QVERIFY(view.marked() > 0);

    view.search(QStringLiteral("zzqqxx-nothing"));
    QVERIFY(view.listedChapters().isEmpty());
    QVERIFY(view.findChild<QLabel *>()->text().contains(QLatin1String("No chapter holds")));
    view.search(QString());
    QCOMPARE(static_cast<int>(view.listedChapters().size()), all);
    QCOMPARE(view.marked(), 0);

    auto *browser = view.findChild<QTextBrowser *>(QStringLiteral("helpBrowser"));
    QVERIFY(view.showChapter(QStringLiteral("index.md")));
    emit browser->anchorClicked(QUrl(QStringLiteral("06-the-window.md")));
    QCOMPARE(view.currentChapter(), QStringLiteral("06-the-window.md"));
    QVERIFY(browser->toPlainText().startsWith(QLatin1String("The window")));
    QVERIFY(!view.showChapter(QStringLiteral("no-such-chapter.md")));

    // Every picture a chapter shows loads from the guide's ../screenshots/.
    int pictures = 0;
    static const QRegularExpression image(QStringLiteral(R"(!\[[^\]]*\]\(([^)\s]+))"));
    for (const GuideChapter &c : view.chapters())
      for (auto it = image.globalMatch(c.text); it.hasNext();) {
        const QString link = it.next().captured(1);
        QVERIFY(view.showChapter(c.file));
        const QVariant data = browser->loadResource(QTextDocument::ImageResource, QUrl(link));
        QImage picture;
        if (data.canConvert<QByteArray>()) picture.loadFromData(data.toByteArray());
        QVERIFY2(!picture.isNull(), qPrintable(c.file + ": " + link));
        ++pictures;
      }
    QVERIFY(pictures >= 3);
  }

  // A narrow chapter list wraps the long titles onto more lines: no sideways scrolling, no title
  // cut at the list's edge, each whole in its tooltip too.
  void longTitlesWrap() {
    HelpView view;
    view.resize(800, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.findChild<QSplitter *>()->setSizes({170, 630});
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    QCoreApplication::processEvents();
    auto *list = view.findChild<QListWidget *>(QStringLiteral("helpChapters"));
    QVERIFY(list && list->count() >= 10);
    list->doItemsLayout();
    QVERIFY(!list->horizontalScrollBar()->isVisible());
    int wrapped = 0;
    for (int i = 0; i < list->count(); ++i) {
      const QRect r = list->visualItemRect(list->item(i));
      QVERIFY2(r.right() <= list->viewport()->width(), qPrintable(list->item(i)->text()));
      QCOMPARE(list->item(i)->toolTip(), list->item(i)->text());
      if (r.height() > list->fontMetrics().lineSpacing() * 3 / 2) ++wrapped;
    }
    QVERIFY(wrapped > 0);  // "Security: what is isolated, what is not, how to check" does not fit on one line
  }

  void f1OpensTheGuide() {
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("ws.kwb")));
    window.show();
    QVERIFY_SETTLED(window);
    auto *action = window.findChild<QAction *>(QStringLiteral("actionUserGuide"));
    QVERIFY(action);
    QCOMPARE(action->shortcut(), QKeySequence(QKeySequence::HelpContents));
    action->trigger();
    action->trigger();
    const auto views = window.findChildren<HelpView *>();
    QCOMPARE(views.size(), 1);
    QVERIFY(views.front()->isVisible());
    QVERIFY(window.showUserGuide(QStringLiteral("14-agent-sessions.md")) == views.front());
    QCOMPARE(views.front()->currentChapter(), QStringLiteral("14-agent-sessions.md"));
  }
};

QTEST_MAIN(TestHelpView)
#include "tst_help_view.moc"
