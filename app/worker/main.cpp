// kwb-worker: the process that owns one GPU's CUDA context. For now it reports its version and
// the devices it can see; the evaluation protocol arrives with the evaluation engine.
#include <cstring>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/gpu/device_info.h"
#include "core/gpu/device_report.h"
#include "kwb/version.h"

namespace {
void usage(std::ostream &out) {
  out << "Usage: kwb-worker [--version] [--devices [--json]]\n"
         "The GPU worker of Kernel Workbench. It is started by kwb and kernel-workbench;\n"
         "run by hand it lists the devices it can see.\n";
}
}  // namespace

int main(int argc, char **argv) {
  bool json = false, devices = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--version")) {
      std::cout << "kwb-worker " << kwb::kVersion << "\n";
      return 0;
    } else if (!std::strcmp(argv[i], "--devices")) {
      devices = true;
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      usage(std::cout);
      return 0;
    } else {
      std::cerr << "kwb-worker: unknown argument '" << argv[i] << "'\n";
      usage(std::cerr);
      return 2;
    }
  }
  if (!devices && !json) {
    usage(std::cout);
    return 0;
  }
  const auto inventory = kwb::probeGpus();
  if (json) std::cout << nlohmann::json(inventory).dump(2) << "\n";
  else std::cout << kwb::formatInventory(inventory);
  return 0;
}
