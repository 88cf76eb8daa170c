#pragma once
// What Optimize asks before an agent session starts (issue 16: "settings in the GUI and CLI"):
// the provider and model, G, K and the number of groups, DCP's thresholds, the reward's discount,
// the budgets, and the profiler and sanitizer steps: the same choices as `kwb optimize`'s options.
// Prefilled with the last session's choices; the window remembers what was accepted.
#include <QDialog>
#include <QStringList>

#include "core/agent/session_store.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace kwb::ui {

class SessionSettingsDialog : public QDialog {
  Q_OBJECT

 public:
  // providers: the configured providers' names (at least one); provider: the one to preselect.
  SessionSettingsDialog(const QStringList &providers, const QString &provider, const QString &model,
                        const kwb::agent::SessionSettings &settings, QWidget *parent = nullptr);

  QString provider() const;
  QString model() const;  // empty: the provider's default
  // The choices made here over the settings the dialog was given (the rest kept as they were).
  kwb::agent::SessionSettings settings() const;
  // Empty when the choices can start a session, else why not (shown under the form, OK disabled).
  QString problem() const;

 private:
  void validate();

  kwb::agent::SessionSettings base_;
  QComboBox *provider_ = nullptr;
  QLineEdit *model_ = nullptr;
  QSpinBox *candidates_ = nullptr, *turns_ = nullptr, *groups_ = nullptr;
  QSpinBox *easyBelow_ = nullptr, *hopelessAbove_ = nullptr;
  QDoubleSpinBox *discount_ = nullptr, *minGain_ = nullptr;
  QDoubleSpinBox *dollars_ = nullptr;
  QSpinBox *tokens_ = nullptr, *minutes_ = nullptr;
  QDoubleSpinBox *timeCap_ = nullptr;
  QCheckBox *profile_ = nullptr, *sanitize_ = nullptr, *skills_ = nullptr, *proposedCards_ = nullptr, *memory_ = nullptr;
  QLabel *problem_ = nullptr;
  QPushButton *ok_ = nullptr;
};

}  // namespace kwb::ui
