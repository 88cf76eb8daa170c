#include "ui/workbench_context.h"

namespace kwb::ui {

WorkbenchContext::WorkbenchContext(QObject *parent) : QObject(parent) {}

template <typename Call>
void WorkbenchContext::notify(Call call) {
  // A view may add or remove views while being told: tell the ones registered now.
  const QList<Registered> views = views_;
  for (const auto &r : views)
    if (!r.isObject || r.alive) call(r.view);
}

void WorkbenchContext::setTask(const QString &folder, const QString &name) {
  if (folder == taskFolder_ && name == taskName_) return;
  const bool otherTask = folder != taskFolder_;
  taskFolder_ = folder;
  taskName_ = name;
  // A candidate or baseline of another task means nothing here.
  const bool dropSelection = otherTask && selection_ && selection_->run.taskFolder != folder;
  const bool dropBaseline = otherTask && baseline_ && baseline_->run.taskFolder != folder;
  if (dropSelection) selection_.reset();
  if (dropBaseline) baseline_.reset();
  notify([this](WorkbenchView *v) { v->onTaskChanged(*this); });
  emit taskChanged();
  if (dropSelection) {
    notify([this](WorkbenchView *v) { v->onSelectionChanged(*this); });
    emit selectionChanged();
  }
  if (dropBaseline) {
    notify([this](WorkbenchView *v) { v->onBaselineChanged(*this); });
    emit baselineChanged();
  }
}

void WorkbenchContext::select(const CandidateSelection &selection) {
  selection_ = selection;
  notify([this](WorkbenchView *v) { v->onSelectionChanged(*this); });
  emit selectionChanged();
}

void WorkbenchContext::clearSelection() {
  if (!selection_) return;
  selection_.reset();
  notify([this](WorkbenchView *v) { v->onSelectionChanged(*this); });
  emit selectionChanged();
}

void WorkbenchContext::pinBaseline(const CandidateSelection &baseline) {
  baseline_ = baseline;
  notify([this](WorkbenchView *v) { v->onBaselineChanged(*this); });
  emit baselineChanged();
}

void WorkbenchContext::unpinBaseline() {
  if (!baseline_) return;
  baseline_.reset();
  notify([this](WorkbenchView *v) { v->onBaselineChanged(*this); });
  emit baselineChanged();
}

void WorkbenchContext::addView(WorkbenchView *view) {
  if (!view) return;
  for (const auto &r : views_)
    if (r.view == view) return;
  Registered r;
  r.view = view;
  view->context_ = this;
  if (auto *object = dynamic_cast<QObject *>(view)) {
    r.alive = object;
    r.isObject = true;
  }
  views_.append(r);
}

void WorkbenchContext::removeView(WorkbenchView *view) {
  views_.removeIf([view](const Registered &r) { return r.view == view; });
}

}  // namespace kwb::ui
