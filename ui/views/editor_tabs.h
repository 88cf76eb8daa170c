#pragma once
// The central tabs: one CudaEditor per open file, "*" after the name while it has unsaved
// changes, and a Save / Discard / Cancel question before a modified tab closes.
#include <QList>
#include <QTabWidget>

#include "ui/settings/app_settings.h"
#include "ui/workbench_context.h"

namespace kwb::ui {

class CudaEditor;

// In the window's context: a session candidate opened anywhere (a double click in the Session
// view, Open in Editor) is written to its session's folder and shown here.
class EditorTabs : public QTabWidget, public WorkbenchView {
  Q_OBJECT

 public:
  explicit EditorTabs(QWidget *parent = nullptr);

  void onSelectionChanged(const WorkbenchContext &context) override;
  // `source` written to folder/name and shown (made current); a tab of that file that the user has
  // not edited shows the new text. nullptr (and *error) when it cannot be written or read.
  CudaEditor *openCode(const QString &folder, const QString &source, const QString &name, QString *error);
  // A session's candidate: openCode() into userDataDir()/sessions/ID.
  CudaEditor *openCandidate(const QString &sessionId, const QString &source, const QString &name, QString *error);

  // Opens the file in a new tab, or returns the tab that already shows it. Does not change the
  // current tab. Returns nullptr (and sets *error) when the file cannot be read.
  CudaEditor *openFile(const QString &path, QString *error);

  CudaEditor *editorAt(int index) const;
  CudaEditor *currentEditor() const;
  CudaEditor *editorFor(const QString &path) const;
  QList<CudaEditor *> editors() const;
  bool hasUnsavedChanges() const;

  // Saves and reports through fileSaved / saveFailed.
  bool save(CudaEditor *editor);
  // Asks about unsaved changes first; false when the user cancelled or saving failed.
  bool closeTab(int index);
  // Closes every tab whose file is outside `folder`; a cancelled question keeps that tab.
  void closeTabsOutside(const QString &folder);
  // Asks once per modified tab; false when the user cancelled (nothing is closed then).
  bool confirmDiscardOrSaveAll();

  void applySettings(const settings::EditorSettings &editor);

 signals:
  void fileSaved(const QString &path);
  void saveFailed(const QString &path, const QString &message);
  // A candidate selected in the context could not be opened: why.
  void openFailed(const QString &message);
  void modifiedChanged(bool anyModified);
  void countChanged(int count);

 protected:
  void tabInserted(int index) override;
  void tabRemoved(int index) override;

 private:
  enum class Answer { Save, Discard, Cancel };
  Answer askAboutChanges(CudaEditor *editor);
  // Asks about unsaved changes and acts on the answer; false when the user cancelled or saving failed.
  bool settleChanges(CudaEditor *editor);
  void updateTitle(CudaEditor *editor);
  void updateTitles();

  settings::EditorSettings settings_;
};

}  // namespace kwb::ui
