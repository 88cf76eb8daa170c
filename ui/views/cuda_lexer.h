#pragma once
// C++ highlighting that knows CUDA: qualifiers are keywords, built-in variables and intrinsics
// get their own colour (keyword set 2), and vector/half/CUDA runtime types another (set 4,
// "global classes").
#include <QFont>

#include <Qsci/qscilexercpp.h>

namespace kwb::ui {

class CudaLexer : public QsciLexerCPP {
  Q_OBJECT

 public:
  explicit CudaLexer(QObject *parent = nullptr);

  const char *language() const override;
  const char *keywords(int set) const override;
  QString description(int style) const override;
  QColor defaultColor(int style) const override;
  QColor defaultPaper(int style) const override;
  QFont defaultFont(int style) const override;

  // Sets the monospace font every style derives from (bold keywords, italic comments).
  void setBaseFont(const QFont &font);

 private:
  QFont styledFont(int style) const;
  QFont base_;
};

}  // namespace kwb::ui
