#include "ui/services/gpu_gate.h"

#include <QCoreApplication>

namespace kwb::ui {

namespace {

QString tr(const char *text) {
  return QCoreApplication::translate("GpuGate", text);
}

// What holds the GPU now, in words; empty when nothing does.
QString busyWith(const GpuState &s) {
  if (s.session) return tr("an agent session is running");
  if (s.tuning) return tr("a tuning is running");
  if (s.building) return tr("a lineage is being built");
  if (s.profiling) return tr("a profile is being taken");
  if (s.evaluating) return tr("a run is in progress");
  if (s.trying) return tr("a skill card is being tried");
  return {};
}

}  // namespace

GpuVerdict gpuVerdict(GpuAction action, const GpuState &s) {
  const auto no = [](const QString &why) { return GpuVerdict{false, why}; };
  if (!s.taskOpen) return no(tr("Open a task first (File ▸ Open Task Folder…, or double-click one in Tasks)"));
  const bool needsKernel = action != GpuAction::BuildLineage && action != GpuAction::ResumeSession;
  if (needsKernel && !s.kernelToRun) return no(tr("Open the task's kernel (a .cu file) in the editor first"));
  const bool noGpu = s.probed && !s.gpu;
  const QString why = s.noGpuWhy.isEmpty() ? tr("no CUDA device here") : s.noGpuWhy;
  if (noGpu && action == GpuAction::Profile)
    return no(tr("Profiling reads the GPU's counters: %1").arg(why));
  if (noGpu && action == GpuAction::BuildLineage)
    return no(tr("A lineage build times every step on a GPU: %1. The bundled steps are shown read-only").arg(why));
  // One job at a time, GPU or not: the window's jobs share the workers.
  if (const QString busy = busyWith(s); !busy.isEmpty()) {
    const bool timing = s.gpu && (s.session || s.tuning || s.building || s.profiling);
    return no(timing ? tr("Wait, or stop it: %1, and another job now would disturb its timing").arg(busy)
                     : tr("Wait, or stop it: %1").arg(busy));
  }
  if (noGpu) return {true, tr("No GPU (%1): compiled and checked for launch only, nothing timed").arg(why)};
  return {true, {}};
}

}  // namespace kwb::ui
