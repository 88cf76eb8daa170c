#pragma once

namespace kwb::ui {
// Registers the compiled-in resources (icons). Safe to call more than once.
void initResources();
}  // namespace kwb::ui
