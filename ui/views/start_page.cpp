#include "ui/views/start_page.h"

#include <algorithm>

#include "core/llm/provider_config.h"
#include "core/text/url_credentials.h"
#include "ui/services/agent_service.h"
#include "ui/settings/app_settings.h"

#include <QAction>
#include <QGridLayout>
#include <QIcon>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

namespace kwb::ui {

namespace {

// A step: a wide button, and beside it what it does in a sentence.
QPushButton *step(QGridLayout *grid, int row, const QString &text, const QString &what, QWidget *parent) {
  auto *button = new QPushButton(text, parent);
  button->setMinimumHeight(36);
  button->setMinimumWidth(260);
  auto *label = new QLabel(what, parent);
  label->setWordWrap(true);
  label->setStyleSheet(QStringLiteral("color: #4b5563;"));
  grid->addWidget(button, row, 0);
  grid->addWidget(label, row, 1);
  return button;
}

QString withShortcut(QAction *action) {
  QString text = action->text().remove(QLatin1Char('&'));
  if (!action->shortcut().isEmpty()) text += QStringLiteral("  (%1)").arg(action->shortcut().toString(QKeySequence::NativeText));
  return text;
}

}  // namespace

StartPage::StartPage(QAction *openTask, QAction *importOperator, QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("startPage"));
  // In a small window the page scrolls rather than squeezing its lines into each other.
  auto *scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto *page = new QWidget(scroll);
  auto *icon = new QLabel(page);
  icon->setPixmap(QIcon(QStringLiteral(":/icons/kernel-workbench.svg")).pixmap(80, 80));
  icon->setAlignment(Qt::AlignCenter);
  auto *title = new QLabel(tr("Take a CUDA kernel from correct to fast"), page);
  title->setAlignment(Qt::AlignCenter);
  title->setWordWrap(true);
  title->setStyleSheet(QStringLiteral("font-size: 16pt; color: #374151;"));
  auto *grid = new QGridLayout;
  grid->setHorizontalSpacing(16);
  grid->setVerticalSpacing(12);
  grid->setColumnStretch(1, 1);
  open_ = step(grid, 0, withShortcut(openTask),
               tr("A task is a folder with task.toml: the reference, the kernel to improve, its sizes. The bundled "
                  "suite (softmax, GEMM, layernorm…) is listed in the Tasks panel on the left: double-click one."),
               page);
  open_->setObjectName(QStringLiteral("startOpenTask"));
  import_ = step(grid, 1, withShortcut(importOperator).replace(QStringLiteral(" or KernelBench Problems"), QString()),
                 tr("A PyTorch module (class Model, get_inputs, get_init_inputs: KernelBench's shape) becomes a task: "
                    "PyTorch is its reference, its weights the kernel's inputs, with a starter kernel."),
                 page);
  import_->setObjectName(QStringLiteral("startImport"));
  connect_ = step(grid, 2, tr("Connect an LLM…"),
                  tr("Optimize asks a model for faster kernels, turn by turn: a hosted API (OpenAI, Anthropic, "
                     "OpenRouter) or a server on this machine (llama.cpp, Ollama, vLLM), found by itself."),
                  page);
  connect_->setObjectName(QStringLiteral("startConnectLlm"));
  llm_ = new QLabel(page);
  llm_->setObjectName(QStringLiteral("startLlmStatus"));
  llm_->setWordWrap(true);
  grid->addWidget(llm_, 3, 1);
  connect(open_, &QPushButton::clicked, openTask, &QAction::trigger);
  connect(import_, &QPushButton::clicked, importOperator, &QAction::trigger);
  connect(connect_, &QPushButton::clicked, this, &StartPage::connectLlmRequested);

  auto *where = new QLabel(tr("Then: Run (Ctrl+R) checks and times the kernel; Optimize improves it; the tabs above "
                              "hold the session, the library of skill cards, the experience graph and the profiler "
                              "(Ctrl+1 … Ctrl+5)."),
                           page);
  where->setWordWrap(true);
  where->setAlignment(Qt::AlignCenter);
  where->setStyleSheet(QStringLiteral("color: #6b7280;"));

  auto *column = new QWidget(page);
  column->setMinimumWidth(520);
  column->setMaximumWidth(860);
  auto *inner = new QVBoxLayout(column);
  inner->addWidget(icon);
  inner->addWidget(title);
  inner->addSpacing(18);
  inner->addLayout(grid);
  inner->addSpacing(18);
  inner->addWidget(where);
  auto *outer = new QGridLayout(page);
  outer->setRowStretch(0, 1);
  outer->setRowStretch(2, 2);
  outer->setColumnStretch(0, 1);
  outer->setColumnStretch(2, 1);
  outer->addWidget(column, 1, 1);
  scroll->setWidget(page);
  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scroll);
  setLlmStatus(QString(), false);
}

void StartPage::setLlmStatus(const QString &text, bool configured) {
  llm_->setText(text.isEmpty() ? tr("No LLM is set up yet: without one, Optimize runs the built-in autotuner.") : text);
  llm_->setStyleSheet(configured ? QStringLiteral("color: #047857;") : QStringLiteral("color: #92400e;"));
}

void StartPage::readLlmStatus() {
  // What Optimize would use: the provider chosen last, else the first configured.
  std::vector<kwb::llm::ProviderConfig> providers;
  try {
    providers = kwb::llm::loadProviders();
  } catch (const std::exception &e) {
    setLlmStatus(tr("The LLM providers cannot be read: %1").arg(QString::fromStdString(e.what())), false);
    return;
  }
  if (providers.empty()) {
    setLlmStatus(QString(), false);
    return;
  }
  const QString chosen = settings::agentProvider();
  const auto it = std::find_if(providers.begin(), providers.end(),
                               [&](const auto &p) { return QString::fromStdString(p.name) == chosen; });
  const auto &p = it != providers.end() ? *it : providers.front();
  setLlmStatus(tr("Optimize asks %1%2.")
                               .arg(shownProvider(QString::fromStdString(p.name)),
                                    p.model.empty() ? QString() : tr(" (%1)").arg(QString::fromStdString(p.model))),
                           true);
}

}  // namespace kwb::ui
