#include "ui/views/editor_tabs.h"
#include "core/paths/install_paths.h"

#include <algorithm>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMessageBox>
#include <QTabBar>

#include "ui/views/cuda_editor.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

namespace {

bool isInside(const QString &path, const QString &folder) {
  return normalizedPath(path).startsWith(normalizedPath(folder) + QLatin1Char('/'));
}

}  // namespace

EditorTabs::EditorTabs(QWidget *parent) : QTabWidget(parent), settings_(settings::editor()) {
  setObjectName(QStringLiteral("editorTabs"));
  setDocumentMode(true);
  setTabsClosable(true);
  setMovable(true);
  setElideMode(Qt::ElideMiddle);
  tabBar()->setUsesScrollButtons(true);
  connect(this, &QTabWidget::tabCloseRequested, this, [this](int index) { closeTab(index); });
}

CudaEditor *EditorTabs::openFile(const QString &path, QString *error) {
  if (CudaEditor *existing = editorFor(path)) return existing;
  auto *editor = new CudaEditor(this);
  editor->applySettings(settings_);
  if (!editor->loadFile(path, error)) {
    delete editor;
    return nullptr;
  }
  const int index = addTab(editor, editor->fileName());  // tabInserted() sets the titles
  setTabToolTip(index, editor->filePath());
  connect(editor, &CudaEditor::modificationChanged, this, [this, editor](bool) {
    updateTitle(editor);
    emit modifiedChanged(hasUnsavedChanges());
  });
  return editor;
}

CudaEditor *EditorTabs::editorAt(int index) const {
  return qobject_cast<CudaEditor *>(widget(index));
}

CudaEditor *EditorTabs::currentEditor() const {
  return editorAt(currentIndex());
}

CudaEditor *EditorTabs::editorFor(const QString &path) const {
  const QString wanted = normalizedPath(path);
  for (CudaEditor *editor : editors()) {
    if (editor->filePath() == wanted) return editor;
  }
  return nullptr;
}

QList<CudaEditor *> EditorTabs::editors() const {
  QList<CudaEditor *> list;
  for (int i = 0; i < count(); ++i) {
    if (CudaEditor *editor = editorAt(i)) list.append(editor);
  }
  return list;
}

bool EditorTabs::hasUnsavedChanges() const {
  const auto list = editors();
  return std::any_of(list.begin(), list.end(), [](CudaEditor *e) { return e->isModified(); });
}

bool EditorTabs::save(CudaEditor *editor) {
  if (!editor) return false;
  QString error;
  if (!editor->saveFile(&error)) {
    emit saveFailed(editor->filePath(), error);
    return false;
  }
  emit fileSaved(editor->filePath());
  return true;
}

bool EditorTabs::settleChanges(CudaEditor *editor) {
  switch (askAboutChanges(editor)) {
    case Answer::Cancel:
      return false;
    case Answer::Save:
      return save(editor);
    case Answer::Discard:
      return true;
  }
  return false;
}

bool EditorTabs::closeTab(int index) {
  CudaEditor *editor = editorAt(index);
  if (!editor) return false;
  if (editor->isModified() && !settleChanges(editor)) return false;
  removeTab(index);
  editor->deleteLater();
  emit modifiedChanged(hasUnsavedChanges());
  return true;
}

void EditorTabs::closeTabsOutside(const QString &folder) {
  for (int i = count() - 1; i >= 0; --i) {
    CudaEditor *editor = editorAt(i);
    if (editor && !isInside(editor->filePath(), folder)) closeTab(i);
  }
}

bool EditorTabs::confirmDiscardOrSaveAll() {
  for (CudaEditor *editor : editors()) {
    if (!editor->isModified()) continue;
    setCurrentWidget(editor);
    if (!settleChanges(editor)) return false;
  }
  return true;
}

EditorTabs::Answer EditorTabs::askAboutChanges(CudaEditor *editor) {
  const auto button = QMessageBox::question(
      this, tr("Unsaved changes"),
      tr("%1 has unsaved changes. Save them before closing?").arg(editor->fileName()),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (button == QMessageBox::Save) return Answer::Save;
  if (button == QMessageBox::Discard) return Answer::Discard;
  return Answer::Cancel;
}

void EditorTabs::updateTitle(CudaEditor *editor) {
  const int index = indexOf(editor);
  if (index < 0) return;
  // Two open files of one name (two tasks' task.toml) get their folder's name appended.
  int sameName = 0;
  for (CudaEditor *other : editors()) sameName += other->fileName() == editor->fileName() ? 1 : 0;
  QString title = editor->fileName();
  if (sameName > 1)
    title += QStringLiteral(" (%1)").arg(QFileInfo(QFileInfo(editor->filePath()).absolutePath()).fileName());
  title.replace(QLatin1Char('&'), QLatin1String("&&"));
  if (editor->isModified()) title += QLatin1Char('*');
  setTabText(index, title);
}

void EditorTabs::updateTitles() {
  for (CudaEditor *editor : editors()) updateTitle(editor);
}

void EditorTabs::applySettings(const settings::EditorSettings &editor) {
  settings_ = editor;
  for (CudaEditor *e : editors()) e->applySettings(editor);
}

void EditorTabs::tabInserted(int index) {
  QTabWidget::tabInserted(index);
  updateTitles();
  emit countChanged(count());
}

void EditorTabs::tabRemoved(int index) {
  QTabWidget::tabRemoved(index);
  updateTitles();
  emit countChanged(count());
}

CudaEditor *EditorTabs::openCode(const QString &folder, const QString &source, const QString &name, QString *error) {
  const QDir dir(folder);
  QDir().mkpath(dir.path());
  QFile file(dir.filePath(name));
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(source.toUtf8()) < 0) {
    if (error) *error = tr("Cannot write %1: %2").arg(file.fileName(), file.errorString());
    return nullptr;
  }
  file.close();
  CudaEditor *editor = openFile(file.fileName(), error);
  // Open already (the same name in another session): shown with the code just written unless the
  // user has edited it there.
  if (editor && editor->text() != source && !editor->isModified() && !editor->loadFile(file.fileName(), error))
    editor = nullptr;
  if (editor) setCurrentWidget(editor);
  return editor;
}

void EditorTabs::onSelectionChanged(const WorkbenchContext &context) {
  const auto &s = context.selection();
  if (!s || !s->activate || s->origin != CandidateSelection::Origin::SessionCandidate || s->source.isEmpty()) return;
  QString error;
  if (!openCandidate(s->sessionId, s->source, s->name, &error)) emit openFailed(error);
}

CudaEditor *EditorTabs::openCandidate(const QString &sessionId, const QString &source, const QString &name, QString *error) {
  // The candidate's code in a file of its own (Run, Profile, diff): userDataDir()/sessions/ID/NAME.
  const QString folder = QString::fromStdString((kwb::userDataDir() / "sessions").string()) + QLatin1Char('/') +
                         (sessionId.isEmpty() ? QStringLiteral("unsaved") : sessionId);
  return openCode(folder, source, name, error);
}

}  // namespace kwb::ui
