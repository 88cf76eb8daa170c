#pragma once
// One source file in an editor: CUDA/C++ highlighting for sources, a plain properties look for
// task.toml, and problem markers (a margin symbol, a tinted line and an inline annotation).
#include <QString>

#include <Qsci/qsciscintilla.h>
#include <Qsci/qscistyle.h>

#include "ui/app_settings.h"

namespace kwb::ui {

class CudaEditor : public QsciScintilla {
  Q_OBJECT

 public:
  // The Scintilla style number of problem annotations, the same in every editor. QsciStyle(-1)
  // would take a fresh number from a process-wide pool of 24 (63 down to 40) that is never given
  // back, so annotations lost their style after a few dozen editors. 63 is free in every lexer
  // used here (C++: 0-27 and 64-91 for inactive code; properties: 0-5; Python: 0-19), is not one
  // of Scintilla's predefined styles (32-39), and lies inside the 64 styles Scintilla always has.
  static constexpr int kAnnotationStyle = 63;

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

  // The lexer style at a byte position, after styling the whole text.
  int styleAt(int position);

 private:
  void chooseLexer();
  void applyFont();
  void updateMarginWidth();

  QString path_;
  settings::EditorSettings settings_;
  QsciStyle annotationStyle_;
  int problems_ = 0;
};

}  // namespace kwb::ui
