#include "ui/resources_init.h"

#include <QtGlobal>

// Q_INIT_RESOURCE must be used outside any namespace.
static void initKernelWorkbenchResources() {
  Q_INIT_RESOURCE(resources);
}

namespace kwb::ui {

void initResources() {
  static const bool done = (initKernelWorkbenchResources(), true);
  Q_UNUSED(done);
}

}  // namespace kwb::ui
