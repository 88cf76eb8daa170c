#pragma once
// Status bar label for the GPU: "Probing GPUs…", then the inventory's one-line summary; the
// tooltip says which CUDA libraries were loaded, from where, or why not.
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
  void setInventory(const kwb::GpuInventory &inventory);
  bool hasInventory() const { return probed_; }

  // The tooltip text for an inventory (HTML), exposed for tests and the About box.
  static QString describe(const kwb::GpuInventory &inventory);

 private:
  bool probed_ = false;
};

}  // namespace kwb::ui
