#include "ui/views/gpu_status_label.h"

#include "core/gpu/device_info.h"

namespace kwb::ui {

namespace {

QString fromStd(const std::string &text) {
  return QString::fromStdString(text);
}

}  // namespace

GpuStatusLabel::GpuStatusLabel(QWidget *parent) : QLabel(parent) {
  setObjectName(QStringLiteral("gpuStatusLabel"));
  setTextFormat(Qt::PlainText);
  setContentsMargins(6, 0, 6, 0);
  setProbing();
}

void GpuStatusLabel::setProbing() {
  setText(tr("Probing GPUs…"));
  setToolTip(tr("Looking for the CUDA driver, NVRTC, CUPTI and NVML, and the GPUs they see."));
  setStyleSheet(QStringLiteral("color: #6b7280;"));
}

void GpuStatusLabel::setInventory(const kwb::GpuInventory &inventory, const QString &summary) {
  setText(summary);
  setToolTip(describe(inventory, summary));
  setStyleSheet(inventory.hasDevices() ? QStringLiteral("color: #15803d; font-weight: 600;")
                                       : QStringLiteral("color: #92400e;"));
}

void GpuStatusLabel::setProbeFailed(const QString &summary, const QString &detail) {
  setText(summary);
  setToolTip(QStringLiteral("<b>%1</b><br>%2").arg(summary.toHtmlEscaped(), detail.toHtmlEscaped()));
  setStyleSheet(QStringLiteral("color: #b91c1c;"));
}

QString GpuStatusLabel::describe(const kwb::GpuInventory &inventory, const QString &summary) {
  QString html = QStringLiteral("<b>%1</b>").arg(summary.toHtmlEscaped());
  if (!inventory.problem.empty()) {
    html += QStringLiteral("<br>%1").arg(fromStd(inventory.problem).toHtmlEscaped());
  }
  if (inventory.driverVersion > 0) {
    html += tr("<br>Driver supports CUDA %1.%2")
                .arg(inventory.driverVersion / 1000)
                .arg((inventory.driverVersion % 1000) / 10);
  }
  for (const auto &device : inventory.devices) {
    html += QStringLiteral("<br>GPU %1: %2 (compute %3, %4 SMs, %5 GiB)")
                .arg(device.ordinal)
                .arg(fromStd(device.name).toHtmlEscaped(), fromStd(device.computeCapability()))
                .arg(device.smCount)
                .arg(static_cast<double>(device.totalMemoryBytes) / (1024.0 * 1024.0 * 1024.0), 0, 'f', 1);
  }
  html += QStringLiteral("<table style='margin-top:6px'>");
  for (const auto &library : inventory.libraries) {
    QString state;
    if (library.loaded) {
      state = tr("loaded");
      if (!library.version.empty()) state += QStringLiteral(" ") + fromStd(library.version).toHtmlEscaped();
      if (!library.path.empty()) state += QStringLiteral(" — ") + fromStd(library.path).toHtmlEscaped();
    } else {
      state = tr("not loaded");
      if (!library.problem.empty()) state += QStringLiteral(": ") + fromStd(library.problem).toHtmlEscaped();
    }
    html +=
        QStringLiteral("<tr><td style='padding-right:8px'><b>%1</b></td><td style='color:%2'>%3</td></tr>")
            .arg(fromStd(library.name).toHtmlEscaped(),
                 library.loaded ? QStringLiteral("#15803d") : QStringLiteral("#b91c1c"), state);
  }
  html += QStringLiteral("</table>");
  return html;
}

}  // namespace kwb::ui
