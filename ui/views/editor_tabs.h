#pragma once
// The central tabs: one CudaEditor per open file, "*" after the name while it has unsaved
// changes, and a Save / Discard / Cancel question before a modified tab closes.
#include <QList>
#include <QTabWidget>

#include "ui/settings/app_settings.h"

namespace kwb::ui {

class CudaEditor;

class EditorTabs : public QTabWidget {
  Q_OBJECT

 public:
  explicit EditorTabs(QWidget *parent = nullptr);

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
