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
  explicit CudaEditor(QWidget *parent = nullptr);
  ~CudaEditor() override;

  // Reads the file (UTF-8) and picks the lexer from its extension. On failure returns false and
  // sets *error to a message that names the file.
  bool loadFile(const QString &path, QString *error);
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
