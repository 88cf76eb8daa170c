#pragma once
// What the window's controllers (ui/window) ask of the window itself: the open task, the kernel in
// the editor, the GPU gate's answer, and the few things only the window does (its status line, its
// actions' state, the Settings dialog). MainWindow implements it; a controller holds the services
// and views it works with and this, and never the MainWindow.
#include <QString>

#include "ui/services/gpu_gate.h"

namespace kwb::ui {

class CudaEditor;

class WorkbenchShell {
 public:
  virtual ~WorkbenchShell() = default;
  virtual QString taskFolder() const = 0;
  virtual QString taskName() const = 0;
  virtual QString workspaceFile() const = 0;
  // The editor whose kernel an action takes (the task's starter when the current tab is no CUDA
  // source); nullptr without a task.
  virtual CudaEditor *kernelEditor() = 0;
  // The editor in front, whatever it shows; nullptr when none is open.
  virtual CudaEditor *shownEditor() = 0;
  virtual GpuVerdict gate(GpuAction action) = 0;
  // Whether jobs run on a GPU (false in compile-only mode).
  virtual bool useDevice() const = 0;
  // Whether the user's settings may be written (not in a screenshot's read-only window).
  virtual bool writesSettings() const = 0;
  virtual void say(const QString &line) = 0;  // the status bar, for a while
  virtual void actionsChanged() = 0;          // something started or ended: the actions' state again
  virtual void workEnded() = 0;               // background work drained: settled() may follow
  virtual void historyChanged() = 0;          // runs were stored: the History lists them again
  virtual bool tuneKernel() = 0;
  virtual bool profileKernel() = 0;
  virtual void showSettingsPage(const QString &page) = 0;
  // A session candidate's code in the editor (its session's folder); false, saying why, when not.
  virtual bool openCandidate(const QString &source, const QString &name) = 0;
};

}  // namespace kwb::ui
