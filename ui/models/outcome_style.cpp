#include "ui/models/outcome_style.h"

namespace kwb::ui {

QString outcomeText(Outcome outcome) {
  QString text = QLatin1String(toString(outcome));
  return text.replace(QLatin1Char('-'), QLatin1Char(' '));
}

OutcomeTone toneOf(Outcome outcome) {
  switch (outcome) {
    case Outcome::Correct:
    case Outcome::Profiled: return OutcomeTone::Good;
    case Outcome::NotRun:
    case Outcome::Cancelled: return OutcomeTone::Quiet;
    case Outcome::Unsupported:
    case Outcome::Timeout:
    case Outcome::NotProfiled: return OutcomeTone::Warning;
    default: return OutcomeTone::Bad;
  }
}

QColor runColour(Outcome outcome) {
  const OutcomeTone tone = toneOf(outcome);
  return toneColour(tone == OutcomeTone::Warning ? OutcomeTone::Bad : tone);
}

QColor toneColour(OutcomeTone tone) {
  switch (tone) {
    case OutcomeTone::Good: return QColor(0x15, 0x80, 0x3d);
    case OutcomeTone::Quiet: return QColor(0x6b, 0x72, 0x80);
    case OutcomeTone::Warning: return QColor(0xb4, 0x53, 0x09);
    case OutcomeTone::Bad: break;
  }
  return QColor(0xb9, 0x1c, 0x1c);
}

}  // namespace kwb::ui
