#include "ui/views/work_area.h"

#include <QAction>
#include <QActionGroup>
#include <QKeySequence>
#include <QSplitter>
#include <QTabBar>

#include <algorithm>

namespace kwb::ui {

namespace {

const char *const kActionNames[] = {"actionShowEditor", "actionShowSession", "actionShowLibrary", "actionShowExperience",
                                    "actionShowProfiler"};

}  // namespace

QString WorkArea::title(Page page) {
  switch (page) {
    case Page::Editor: return tr("Editor");
    case Page::Session: return tr("Session");
    case Page::Library: return tr("Library");
    case Page::Experience: return tr("Experience");
    case Page::Profiler: return tr("Profiler");
  }
  return {};
}

WorkArea::WorkArea(QWidget *editor, QWidget *session, QWidget *lineage, QWidget *skills, QWidget *experience,
                   QWidget *profiler, QWidget *parent)
    : QTabWidget(parent) {
  setObjectName(QStringLiteral("workArea"));
  setDocumentMode(true);
  setMovable(false);
  tabBar()->setExpanding(false);
  library_ = new QSplitter(Qt::Vertical, this);
  library_->setObjectName(QStringLiteral("libraryPage"));
  library_->setChildrenCollapsible(false);
  library_->addWidget(lineage);
  library_->addWidget(skills);
  library_->setStretchFactor(0, 3);
  library_->setStretchFactor(1, 2);
  // The lineage's own wish (the path, the diff) would leave the cards a strip: shared 3 to 2.
  library_->setSizes({600, 400});
  const QString tips[] = {
      tr("The task's files: edit, Run (Ctrl+R), Tune, Profile"),
      tr("The agent session: its groups, candidates, answers, contexts and speedups"),
      tr("The lineages (expert kernels taken apart step by step) and the skill cards learned from them"),
      tr("The experience memory: every Case as a node, its edges, and what a prompt would carry"),
      tr("The profiler: metrics per configuration, the roofline, live samples while runs go"),
  };
  QWidget *pages[] = {editor, session, library_, experience, profiler};
  group_ = new QActionGroup(this);
  for (int i = 0; i < kPages; ++i) {
    // A page's own minimum would be the window's: small screens keep a window that fits.
    pages[i]->setMinimumSize(240, 120);
    addTab(pages[i], title(static_cast<Page>(i)));
    setTabToolTip(i, tips[i] + tr(" (Ctrl+%1)").arg(i + 1));
    auto *action = new QAction(title(static_cast<Page>(i)), this);
    action->setObjectName(QLatin1String(kActionNames[i]));
    action->setCheckable(true);
    action->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    action->setShortcutContext(Qt::WindowShortcut);
    action->setToolTip(tips[i]);
    group_->addAction(action);
    connect(action, &QAction::triggered, this, [this, i] { reveal(static_cast<Page>(i)); });
    actions_.append(action);
  }
  actions_.front()->setChecked(true);
  connect(this, &QTabWidget::currentChanged, this, [this](int index) {
    if (index < 0 || index >= kPages) return;
    actions_[index]->setChecked(true);
    emit pageShown(static_cast<Page>(index));
  });
}

void WorkArea::reveal(Page page) {
  setCurrentIndex(static_cast<int>(page));
}

WorkArea::Page WorkArea::current() const {
  return static_cast<Page>(std::max(0, currentIndex()));
}

QWidget *WorkArea::page(Page page) const {
  return widget(static_cast<int>(page));
}

void WorkArea::onSelectionChanged(const WorkbenchContext &context) {
  const auto &s = context.selection();
  if (!s || !s->activate) return;
  switch (s->origin) {
    case CandidateSelection::Origin::LineageStep:
      reveal(Page::Library);
      break;
    case CandidateSelection::Origin::SessionCandidate:
      reveal(Page::Editor);
      break;
    case CandidateSelection::Origin::GraphNode:
      reveal(Page::Experience);
      break;
    default:
      break;
  }
}

}  // namespace kwb::ui
