// The Source/PTX/SASS panel (issue 5): the bundled softmax starter beside its PTX (NVRTC) and
// SASS (nvdisasm, where installed); clicking a source line marks exactly the instructions of
// that line, clicking an instruction marks its source line; Compare with... shows the diff of
// two lineage steps; and the window's "Show PTX/SASS" action opens the dock on the open task.
#include "isolated_home.h"

#include <memory>

#include <QDockWidget>
#include <QFile>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTextBlock>
#include <QtTest>
#include <QPushButton>

#include "core/compile/disassembly.h"
#include "ui/main_window.h"
#include "window_parts.h"
#include "ui/views/source_view_panel.h"

using kwb::ui::SourceViewPanel;

namespace {

const QString kSoftmax = QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax");

QString read(const QString &path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class TestSourceView : public QObject {
  Q_OBJECT

  std::unique_ptr<IsolatedHome> home_;

 private slots:
  void initTestCase() {
    home_ = std::make_unique<IsolatedHome>();
    QVERIFY(home_->isValid());
  }

  void ptxLinesFollowTheSource() {
    SourceViewPanel panel;
    panel.resize(1000, 500);
    panel.show();
    QSignalSpy ready(&panel, &SourceViewPanel::ready);
    panel.setKind(kwb::ListingKind::Ptx);
    panel.showCandidate(kSoftmax, read(kSoftmax + QStringLiteral("/softmax.cu")), kSoftmax + QStringLiteral("/softmax.cu"));
    QVERIFY(panel.isBusy());
    while (panel.isBusy()) QVERIFY(ready.wait(60000));
    QVERIFY2(panel.statusText().startsWith(QStringLiteral("PTX of softmax.cu")), qPrintable(panel.statusText()));
    // Find a source line that became instructions, through the panel's own listing.
    int line = 0, marked = 0;
    for (int l = 1; l < panel.sourceView()->document()->blockCount() && marked == 0; ++l) {
      marked = panel.selectSourceLine(l);
      line = l;
    }
    QVERIFY(marked > 0);
    QCOMPARE(panel.markedListingLines(), marked);
    QCOMPARE(panel.listingView()->extraSelections().size(), marked);
    // Every marked instruction leads back to that line.
    const int first = panel.listingView()->extraSelections().front().cursor.blockNumber();
    QCOMPARE(panel.selectListingLine(first), line);
    QCOMPARE(panel.markedSourceLine(), line);
    // Clicking in the views does the same.
    QTextCursor c(panel.sourceView()->document()->findBlockByNumber(line - 1));
    panel.sourceView()->setTextCursor(c);
    QCOMPARE(panel.markedSourceLine(), line);
  }

  void sassAndDiff() {
    if (kwb::findDisassemblyTools().nvdisasm.empty())
      QSKIP("nvdisasm is not installed here (packaging/install-deps.sh fetches it)");
    SourceViewPanel panel;
    QSignalSpy ready(&panel, &SourceViewPanel::ready);
    const QString a = kSoftmax + QStringLiteral("/lineage/01-naive.cu"), b = kSoftmax + QStringLiteral("/lineage/02-warp-shuffle.cu");
    panel.showCandidate(kSoftmax, read(a), a);
    while (panel.isBusy()) QVERIFY(ready.wait(60000));
    QVERIFY2(panel.statusText().startsWith(QStringLiteral("SASS of 01-naive.cu")), qPrintable(panel.statusText()));
    QVERIFY(panel.listingText().contains(QStringLiteral("EXIT")));
    panel.compareWith(read(b), b);
    while (panel.isBusy()) QVERIFY(ready.wait(60000));
    QVERIFY(panel.isDiff());
    QVERIFY2(panel.statusText().contains(QStringLiteral("diff against 02-warp-shuffle.cu")), qPrintable(panel.statusText()));
    QVERIFY(panel.listingText().contains(QStringLiteral("\n+")));
    QVERIFY(panel.listingText().contains(QStringLiteral("SHFL")));
    QVERIFY(!panel.listingView()->extraSelections().isEmpty());  // added and removed lines coloured
  }

  void windowActionOpensTheDock() {
    kwb::ui::MainWindow window(home_->path(QStringLiteral("workspace/sv.kwb")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(!window.showListing());  // no task yet
    // Refresh in the view asks the window for the editor's kernel: without a task it says so.
    QTest::mouseClick(partOf<kwb::ui::SourceViewPanel>(window)->refreshButton(), Qt::LeftButton);
    QVERIFY2(partOf<kwb::ui::SourceViewPanel>(window)->statusText().startsWith(QStringLiteral("Open a task first")),
             qPrintable(partOf<kwb::ui::SourceViewPanel>(window)->statusText()));
    QVERIFY(window.openTask(kSoftmax));
    {
      // With a task, Refresh alone (no menu action first) shows the editor's kernel.
      QSignalSpy shown(partOf<kwb::ui::SourceViewPanel>(window), &SourceViewPanel::ready);
      QTest::mouseClick(partOf<kwb::ui::SourceViewPanel>(window)->refreshButton(), Qt::LeftButton);
      while (partOf<kwb::ui::SourceViewPanel>(window)->isBusy()) QVERIFY(shown.wait(60000));
      QVERIFY2(partOf<kwb::ui::SourceViewPanel>(window)->statusText().contains(QStringLiteral("softmax.cu")),
               qPrintable(partOf<kwb::ui::SourceViewPanel>(window)->statusText()));
    }
    QSignalSpy ready(partOf<kwb::ui::SourceViewPanel>(window), &SourceViewPanel::ready);
    window.actions().showListing->trigger();
    QVERIFY(window.findChild<QDockWidget *>(QStringLiteral("sourceViewDock"))->isVisible());
    while (partOf<kwb::ui::SourceViewPanel>(window)->isBusy()) QVERIFY(ready.wait(60000));
    // SASS by default: without a disassembler the panel says which tool is missing.
    const bool tools = kwb::findDisassemblyTools().any();
    QVERIFY2(partOf<kwb::ui::SourceViewPanel>(window)->statusText().contains(tools ? QStringLiteral("SASS of softmax.cu")
                                                              : QStringLiteral("needs the CUDA toolkit's cuobjdump or nvdisasm")),
             qPrintable(partOf<kwb::ui::SourceViewPanel>(window)->statusText()));
  }
};

QTEST_MAIN(TestSourceView)
#include "tst_source_view.moc"
