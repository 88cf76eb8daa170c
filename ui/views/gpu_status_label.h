#pragma once
// Status bar label for the GPU: "Probing GPUs…", then the worker's one-line summary (or why the
// probe failed); the tooltip says which CUDA libraries were loaded, from where, or why not.
#include <QLabel>

namespace kwb {
struct GpuInventory;
}

namespace kwb::ui {

class GpuStatusLabel : public QLabel {
  Q_OBJECT

 public:
  explicit GpuStatusLabel(QWidget *parent = nullptr);

  void setProbing();
  void setInventory(const kwb::GpuInventory &inventory, const QString &summary);
  // The probe gave no inventory (timed out, no worker, worker failed).
  void setProbeFailed(const QString &summary, const QString &detail);

  // The tooltip for an inventory (HTML): devices, driver version, and each library's state.
  static QString describe(const kwb::GpuInventory &inventory, const QString &summary);
};

}  // namespace kwb::ui
