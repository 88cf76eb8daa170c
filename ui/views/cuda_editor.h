#pragma once
// One source file in an editor: CUDA/C++ highlighting for sources, a plain properties look for
// task.toml, problem markers (a margin symbol, a tinted line and an inline annotation), and a
// run's compiler diagnostics, shown the same way until the next edit.
#include <QList>
#include <QMap>
#include <QString>

#include <Qsci/qsciscintilla.h>
#include <Qsci/qscistyle.h>

#include "ui/settings/app_settings.h"

namespace kwb::ui {

// A compiler diagnostic placed on a line of this editor's text.
struct EditorDiagnostic {
  enum class Severity { Error, Warning, Note };
  int line = 0;    // 1-based
  int column = 0;  // 1-based; 0 when unknown
  Severity severity = Severity::Error;
  QString message;
};

class CudaEditor : public QsciScintilla {
  Q_OBJECT

 public:
  // The Scintilla style number of problem annotations, the same in every editor. QsciStyle(-1)
  // would take a fresh number from a process-wide pool of 24 (63 down to 40) that is never given
  // back, so annotations lost their style after a few dozen editors. 63 is free in every lexer
  // used here (C++: 0-27 and 64-91 for inactive code; properties: 0-5; Python: 0-19), is not one
  // of Scintilla's predefined styles (32-39), and lies inside the 64 styles Scintilla always has.
  static constexpr int kAnnotationStyle = 63;
  // Warnings' annotations: free in the same lexers for the same reasons.
  static constexpr int kWarningAnnotationStyle = 62;
  // Margin symbols of diagnostics (problems use marker 0).
  static constexpr int kErrorMarker = 2;
  static constexpr int kWarningMarker = 3;

  explicit CudaEditor(QWidget *parent = nullptr);
  ~CudaEditor() override;

  // Reads the file (UTF-8) and picks the lexer from its extension. On failure returns false and
  // sets *error to a message that names the file.
  bool loadFile(const QString &path, QString *error);
  // Reads the file again when it changed on disk, keeping the cursor and scroll position. Meant
  // for unmodified editors; returns false (and sets *error) when the file cannot be read.
  bool reload(QString *error);
  // Writes the text back atomically; clears the modified flag on success.
  bool saveFile(QString *error);

  const QString &filePath() const { return path_; }
  QString fileName() const;
  bool isCudaSource() const;

  void applySettings(const settings::EditorSettings &editor);

  // Marks a 1-based line (0: the first line) with a problem and shows the message under it.
  void markProblem(int line, const QString &message);
  void clearProblems();
  int problemCount() const { return problems_; }

  // Shows a run's diagnostics in place of the previous ones: errors and warnings get a margin
  // symbol and a tinted line, and every message is annotated under its line (notes without a
  // symbol). Lines past the end go on the last line. Any edit clears them.
  void showDiagnostics(const QList<EditorDiagnostic> &diagnostics);
  void clearDiagnostics();
  int diagnosticCount() const { return static_cast<int>(diagnostics_.size()); }

  // The lexer style at a byte position, after styling the whole text.
  int styleAt(int position);

 private:
  void chooseLexer();
  void applyFont();
  void updateMarginWidth();
  int lineIndex(int line) const;
  // Annotations are one per line: problems and diagnostics of a line share it.
  void refreshAnnotations();

  QString path_;
  settings::EditorSettings settings_;
  QsciStyle annotationStyle_;
  QsciStyle warningAnnotationStyle_;
  int problems_ = 0;
  QMap<int, QStringList> problemNotes_;  // line index -> messages
  QList<EditorDiagnostic> diagnostics_;
};

}  // namespace kwb::ui
