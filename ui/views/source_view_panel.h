#pragma once
// The Source/PTX/SASS panel: the candidate's source beside its PTX or SASS, as the evaluator
// compiles it (the task's kernel and tunables, line information on). Clicking a source line
// marks the instructions it became; clicking an instruction marks its source line. "Compare
// with..." shows the diff of this candidate's listing against another file's, without the
// addresses and encodings that shift. Compiling and disassembling run off the GUI thread
// (BackgroundJobs); only the latest request's answer is shown.
#include <QWidget>

#include "core/compile/listing_request.h"
#include "ui/services/background_jobs.h"

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace kwb::ui {

class SourceViewPanel : public QWidget {
  Q_OBJECT

 public:
  explicit SourceViewPanel(QWidget *parent = nullptr);
  ~SourceViewPanel() override;

  // Shows `source` (from `sourceName`) of the task and computes its listing.
  void showCandidate(const QString &taskFolder, const QString &source, const QString &sourceName);
  // The diff of the shown candidate's listing against another file's text.
  void compareWith(const QString &otherSource, const QString &otherName);
  void setKind(kwb::ListingKind kind);
  void setArch(const QString &arch) { arch_ = arch; }  // sm_XY compiled for (default sm_90)
  void refresh();
  // What Refresh shows is the editor's kernel now: the window answers refreshRequested() with
  // showCandidate() (or says why it cannot, with showProblem()).
  void showProblem(const QString &text);

  // Marks the instructions of a source line (1-based); returns how many.
  int selectSourceLine(int line);
  // Marks the source line of a listing line (0-based); returns it, or 0.
  int selectListingLine(int index);

  bool isBusy() const { return busy_; }
  QPushButton *refreshButton() const { return refresh_; }
  bool isDiff() const { return diffMode_; }
  QString statusText() const;
  QString listingText() const;
  QPlainTextEdit *sourceView() const { return source_; }
  QPlainTextEdit *listingView() const { return listing_; }
  int markedListingLines() const { return markedListing_; }
  int markedSourceLine() const { return markedSource_; }

 signals:
  void refreshRequested();
  void ready();  // a listing or diff is shown (or its error)

 private:
  struct Answer {
    bool diff = false;
    kwb::ListingResult listing;
    std::vector<kwb::DiffLine> lines;
    QString error;
    QString otherName;
  };
  void start(bool diff);
  void onAnswer(const Answer &a);
  void markListing(const std::vector<int> &lines);

  QComboBox *kind_ = nullptr;
  QPushButton *refresh_ = nullptr;
  QPushButton *compare_ = nullptr;
  QLabel *status_ = nullptr;
  QPlainTextEdit *source_ = nullptr;
  QPlainTextEdit *listing_ = nullptr;
  BackgroundJobs *jobs_ = nullptr;  // makes listings off the GUI thread, the newest request winning
  QString arch_ = QStringLiteral("sm_90");
  QString taskFolder_, sourceText_, sourceName_, otherText_, otherName_;
  kwb::Listing shown_;
  bool busy_ = false;
  bool diffMode_ = false;
  int markedListing_ = 0;
  int markedSource_ = 0;
};

}  // namespace kwb::ui
