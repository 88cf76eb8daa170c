#pragma once
// The main window's docks: Tasks on the left, Results on the right, and the short output in the
// bottom strip (Log in front; History, GPUs, Tuning and Source/PTX/SASS tabbed with it), each with
// its toggle in View; the first layout (the centre gets the room), the window's saved geometry and
// dock state, and revealing a dock of the strip with room to read it.
#include <QObject>

class QAction;
class QDockWidget;
class QMainWindow;
class QMenu;
class QWidget;

namespace kwb::ui {

class DockLayout : public QObject {
  Q_OBJECT

 public:
  struct Views {
    QWidget *tasks, *log, *results, *history, *gpus, *tuning, *sourceView;
  };
  // The docks made around `views`, their toggles (and `showListing`, the tool bar's) in `viewMenu`.
  DockLayout(QMainWindow *window, const Views &views, QMenu *viewMenu, QAction *showListing);

  QDockWidget *tasks = nullptr, *log = nullptr, *results = nullptr, *history = nullptr, *gpus = nullptr,
              *tuning = nullptr, *sourceView = nullptr;

  // The saved geometry and state when `saved` (else the screen's room, or a fixed size when `fixed`
  // asks for the same picture everywhere); without a saved layout the default one follows the show.
  void restore(bool saved, bool fixed);
  void save();
  // Called from the window's showEvent: the default layout once the first layout pass has run.
  void shown();
  // Shown, in front, and tall enough to read (two fifths of the height when it had less than a third).
  void reveal(QDockWidget *dock);

 private:
  void applyDefault();

  QMainWindow *window_;
  bool defaultPending_ = false;
};

}  // namespace kwb::ui
