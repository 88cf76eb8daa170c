#include "ui/views/cuda_editor.h"

#include <QColor>
#include <QFile>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFontInfo>
#include <QSaveFile>

#include <algorithm>

#include <Qsci/qscilexerproperties.h>
#include <Qsci/qscilexerpython.h>

#include "ui/views/cuda_lexer.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

namespace {

constexpr int kLineNumberMargin = 0;
constexpr int kSymbolMargin = 1;
constexpr int kFoldMargin = 2;
constexpr int kProblemSymbolMarker = 0;
constexpr int kProblemLineMarker = 1;
constexpr int kErrorLineMarker = 4;
constexpr int kWarningLineMarker = 5;

const QColor kProblemColour(0xdc, 0x26, 0x26);
const QColor kProblemLineColour(0xfd, 0xec, 0xec);
const QColor kAnnotationPaper(0xfe, 0xf2, 0xf2);
const QColor kAnnotationText(0x99, 0x1b, 0x1b);
const QColor kWarningColour(0xd9, 0x77, 0x06);
const QColor kWarningLineColour(0xfe, 0xf6, 0xe4);
const QColor kWarningPaper(0xff, 0xfb, 0xeb);
const QColor kWarningText(0x92, 0x40, 0x0e);

const char *severityWord(EditorDiagnostic::Severity severity) {
  switch (severity) {
    case EditorDiagnostic::Severity::Error: return "error";
    case EditorDiagnostic::Severity::Warning: return "warning";
    case EditorDiagnostic::Severity::Note: return "note";
  }
  return "error";
}

bool isCppSuffix(const QString &suffix) {
  static const QStringList suffixes = {QStringLiteral("cu"),  QStringLiteral("cuh"), QStringLiteral("c"),
                                       QStringLiteral("cc"),  QStringLiteral("cpp"), QStringLiteral("cxx"),
                                       QStringLiteral("h"),   QStringLiteral("hh"),  QStringLiteral("hpp"),
                                       QStringLiteral("hxx"), QStringLiteral("inl"), QStringLiteral("cuinc")};
  return suffixes.contains(suffix);
}

QFont monospaceFont(int pointSize) {
  QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  font.setStyleHint(QFont::Monospace);
  font.setPointSize(pointSize);
  // Without fontconfig's aliases (a bare server, a bundle) "monospace" can resolve to a
  // proportional face; then take an installed fixed-pitch family by name.
  if (!QFontInfo(font).fixedPitch()) {
    const QStringList families = QFontDatabase::families();
    const QStringList preferred = {QStringLiteral("DejaVu Sans Mono"), QStringLiteral("Liberation Mono"),
                                   QStringLiteral("Noto Sans Mono")};
    auto fixed = std::find_if(preferred.begin(), preferred.end(),
                              [&](const QString &f) { return families.contains(f); });
    if (fixed != preferred.end()) {
      font.setFamily(*fixed);
    } else if (auto any = std::find_if(families.begin(), families.end(),
                                       [](const QString &f) { return QFontDatabase::isFixedPitch(f); });
               any != families.end()) {
      font.setFamily(*any);
    }
  }
  return font;
}

}  // namespace

CudaEditor::CudaEditor(QWidget *parent)
    : QsciScintilla(parent),
      annotationStyle_(kAnnotationStyle, QStringLiteral("Problem"), kAnnotationText, kAnnotationPaper,
                       monospaceFont(settings_.fontSize)),
      warningAnnotationStyle_(kWarningAnnotationStyle, QStringLiteral("Warning"), kWarningText, kWarningPaper,
                              monospaceFont(settings_.fontSize)) {
  setUtf8(true);
  setEolMode(EolUnix);

  setMarginType(kLineNumberMargin, NumberMargin);
  setMarginLineNumbers(kLineNumberMargin, true);
  setMarginsForegroundColor(QColor(0x8a, 0x93, 0xa1));
  setMarginsBackgroundColor(QColor(0xf6, 0xf7, 0xf9));

  setMarginType(kSymbolMargin, SymbolMargin);
  setMarginWidth(kSymbolMargin, 14);
  setMarginMarkerMask(kSymbolMargin, (1 << kProblemSymbolMarker) | (1 << kErrorMarker) | (1 << kWarningMarker));
  setMarginSensitivity(kSymbolMargin, false);

  setFolding(BoxedTreeFoldStyle, kFoldMargin);
  setFoldMarginColors(QColor(0xf6, 0xf7, 0xf9), QColor(0xf6, 0xf7, 0xf9));

  markerDefine(Circle, kProblemSymbolMarker);
  setMarkerBackgroundColor(kProblemColour, kProblemSymbolMarker);
  setMarkerForegroundColor(kProblemColour, kProblemSymbolMarker);
  markerDefine(Background, kProblemLineMarker);
  setMarkerBackgroundColor(kProblemLineColour, kProblemLineMarker);
  markerDefine(Circle, kErrorMarker);
  setMarkerBackgroundColor(kProblemColour, kErrorMarker);
  setMarkerForegroundColor(kProblemColour, kErrorMarker);
  markerDefine(RightTriangle, kWarningMarker);
  setMarkerBackgroundColor(kWarningColour, kWarningMarker);
  setMarkerForegroundColor(kWarningColour, kWarningMarker);
  markerDefine(Background, kErrorLineMarker);
  setMarkerBackgroundColor(kProblemLineColour, kErrorLineMarker);
  markerDefine(Background, kWarningLineMarker);
  setMarkerBackgroundColor(kWarningLineColour, kWarningLineMarker);
  // Diagnostics describe the text that was run; once it changes they may point anywhere.
  connect(this, &QsciScintilla::textChanged, this, [this] {
    if (!diagnostics_.isEmpty()) clearDiagnostics();
  });
  setAnnotationDisplay(AnnotationBoxed);

  setCaretLineVisible(true);
  setCaretLineBackgroundColor(QColor(0xf1, 0xf5, 0xfb));
  setCaretForegroundColor(QColor(0x11, 0x18, 0x27));
  setCaretWidth(2);

  setBraceMatching(SloppyBraceMatch);
  setMatchedBraceBackgroundColor(QColor(0xc7, 0xe0, 0xff));
  setMatchedBraceForegroundColor(QColor(0x11, 0x18, 0x27));
  setUnmatchedBraceForegroundColor(kProblemColour);
  setUnmatchedBraceBackgroundColor(QColor(0xfe, 0xe2, 0xe2));

  setAutoIndent(true);
  setIndentationsUseTabs(false);
  setIndentationWidth(0);  // follow the tab width
  setTabIndents(true);
  setBackspaceUnindents(true);
  setIndentationGuides(true);
  setIndentationGuidesForegroundColor(QColor(0xe2, 0xe5, 0xea));

  setEdgeMode(EdgeLine);
  setEdgeColumn(100);
  setEdgeColor(QColor(0xee, 0xf0, 0xf3));

  setSelectionBackgroundColor(QColor(0xbf, 0xdb, 0xfe));
  setWrapMode(WrapNone);
  // Scintilla's default scroll width is a fixed 2000 px; track the longest line instead.
  SendScintilla(SCI_SETSCROLLWIDTH, 1);
  SendScintilla(SCI_SETSCROLLWIDTHTRACKING, 1);

  applySettings(settings_);
}

CudaEditor::~CudaEditor() = default;

bool CudaEditor::loadFile(const QString &path, QString *error) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    if (error) *error = tr("%1: cannot read: %2").arg(path, file.errorString());
    return false;
  }
  const QByteArray bytes = file.readAll();
  path_ = normalizedPath(path);
  setEolMode(bytes.contains("\r\n") ? EolWindows : EolUnix);
  chooseLexer();
  setText(QString::fromUtf8(bytes));
  setModified(false);
  SendScintilla(SCI_EMPTYUNDOBUFFER);
  clearProblems();
  updateMarginWidth();
  return true;
}

bool CudaEditor::reload(QString *error) {
  QFile file(path_);
  if (!file.open(QIODevice::ReadOnly)) {
    if (error) *error = tr("%1: cannot read: %2").arg(path_, file.errorString());
    return false;
  }
  const QString fresh = QString::fromUtf8(file.readAll());
  if (fresh == text()) return true;
  int line = 0;
  int index = 0;
  getCursorPosition(&line, &index);
  const int firstLine = firstVisibleLine();
  setText(fresh);
  setModified(false);
  SendScintilla(SCI_EMPTYUNDOBUFFER);
  clearProblems();
  updateMarginWidth();
  line = std::min(line, std::max(0, lines() - 1));
  setCursorPosition(line, std::min(index, std::max(0, lineLength(line))));
  setFirstVisibleLine(firstLine);
  return true;
}

bool CudaEditor::saveFile(QString *error) {
  if (path_.isEmpty()) {
    if (error) *error = tr("This editor has no file to save to.");
    return false;
  }
  QSaveFile file(path_);
  if (!file.open(QIODevice::WriteOnly)) {
    if (error) *error = tr("%1: cannot write: %2").arg(path_, file.errorString());
    return false;
  }
  file.write(text().toUtf8());
  if (!file.commit()) {
    if (error) *error = tr("%1: cannot write: %2").arg(path_, file.errorString());
    return false;
  }
  setModified(false);
  return true;
}

QString CudaEditor::fileName() const {
  return QFileInfo(path_).fileName();
}

bool CudaEditor::isCudaSource() const {
  return qobject_cast<CudaLexer *>(lexer()) != nullptr;
}

void CudaEditor::chooseLexer() {
  const QString suffix = QFileInfo(path_).suffix().toLower();
  QsciLexer *old = lexer();
  QsciLexer *next = nullptr;
  if (isCppSuffix(suffix)) {
    next = new CudaLexer(this);
  } else if (suffix == QLatin1String("toml")) {
    // QScintilla has no TOML lexer; the properties lexer colours comments, sections and keys.
    next = new QsciLexerProperties(this);
  } else if (suffix == QLatin1String("py")) {
    next = new QsciLexerPython(this);
  }
  setLexer(next);
  delete old;
  applyFont();
}

void CudaEditor::applySettings(const settings::EditorSettings &editor) {
  settings_ = editor;
  setTabWidth(editor.tabWidth);
  applyFont();
}

void CudaEditor::applyFont() {
  const QFont font = monospaceFont(settings_.fontSize);
  if (auto *cuda = qobject_cast<CudaLexer *>(lexer())) {
    cuda->setBaseFont(font);
  } else if (QsciLexer *other = lexer()) {
    other->setDefaultFont(font);
    other->setFont(font, -1);
  } else {
    setFont(font);
  }
  setMarginsFont(font);
  updateMarginWidth();

  QFont annotationFont = font;
  annotationFont.setPointSize(std::max(6, settings_.fontSize - 1));
  annotationStyle_.setFont(annotationFont);
  warningAnnotationStyle_.setFont(annotationFont);
}

void CudaEditor::updateMarginWidth() {
  const int digits = std::max(3, static_cast<int>(QString::number(lines()).size()));
  setMarginWidth(kLineNumberMargin, QString(digits + 1, QLatin1Char('0')));
}

int CudaEditor::lineIndex(int line) const {
  return std::clamp(line > 0 ? line - 1 : 0, 0, std::max(0, lines() - 1));
}

void CudaEditor::markProblem(int line, const QString &message) {
  const int index = lineIndex(line);
  markerAdd(index, kProblemSymbolMarker);
  markerAdd(index, kProblemLineMarker);
  problemNotes_[index].append(message);
  refreshAnnotations();
  ++problems_;
  setCursorPosition(index, 0);
  ensureLineVisible(index);
}

void CudaEditor::clearProblems() {
  markerDeleteAll(kProblemSymbolMarker);
  markerDeleteAll(kProblemLineMarker);
  problemNotes_.clear();
  refreshAnnotations();
  problems_ = 0;
}

void CudaEditor::showDiagnostics(const QList<EditorDiagnostic> &diagnostics) {
  clearDiagnostics();
  diagnostics_ = diagnostics;
  int first = -1;
  for (const EditorDiagnostic &d : diagnostics_) {
    const int index = lineIndex(d.line);
    if (d.severity == EditorDiagnostic::Severity::Error) {
      markerAdd(index, kErrorMarker);
      markerAdd(index, kErrorLineMarker);
    } else if (d.severity == EditorDiagnostic::Severity::Warning) {
      markerAdd(index, kWarningMarker);
      markerAdd(index, kWarningLineMarker);
    }
    if (first < 0 || (d.severity == EditorDiagnostic::Severity::Error && index < first)) first = index;
  }
  refreshAnnotations();
  if (first >= 0) ensureLineVisible(first);
}

void CudaEditor::clearDiagnostics() {
  for (const int marker : {kErrorMarker, kWarningMarker, kErrorLineMarker, kWarningLineMarker}) markerDeleteAll(marker);
  const bool had = !diagnostics_.isEmpty();
  diagnostics_.clear();
  if (had) refreshAnnotations();
}

void CudaEditor::refreshAnnotations() {
  clearAnnotations();
  QMap<int, QStringList> notes = problemNotes_;
  QMap<int, bool> serious;  // a line with a problem or an error takes the error style
  for (auto it = problemNotes_.cbegin(); it != problemNotes_.cend(); ++it) serious[it.key()] = true;
  for (const EditorDiagnostic &d : diagnostics_) {
    const int index = lineIndex(d.line);
    const QString where = d.column > 0 ? QStringLiteral("%1:%2: ").arg(d.line).arg(d.column) : QString();
    notes[index].append(where + QLatin1String(severityWord(d.severity)) + QStringLiteral(": ") + d.message);
    serious[index] = serious.value(index) || d.severity == EditorDiagnostic::Severity::Error;
  }
  for (auto it = notes.cbegin(); it != notes.cend(); ++it) {
    annotate(it.key(), it.value().join(QLatin1Char('\n')),
             serious.value(it.key()) ? annotationStyle_ : warningAnnotationStyle_);
  }
}

int CudaEditor::styleAt(int position) {
  SendScintilla(SCI_COLOURISE, 0, -1);
  return static_cast<int>(SendScintilla(SCI_GETSTYLEAT, static_cast<unsigned long>(position)));
}

}  // namespace kwb::ui
