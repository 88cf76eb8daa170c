// libFuzzer target for the task manifest parser (core/task/manifest_parser.h, issue 17): any
// bytes as task.toml, and, when they parse, the same bytes again as the task's lineage.toml.
// Built and run by tests/fuzz/fuzz-manifest.sh with clang++ -fsanitize=fuzzer,address,undefined;
// CI runs it for a fixed number of inputs (ctest: tst_fuzz_manifest).
//
// A finding: a crash, an overflow, a leak, undefined behaviour, a stack overflow (deep nesting),
// or an exception other than ManifestError (every bad manifest must be reported as one, with its
// file and line), or a message over the parser's cap.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "core/lineage/lineage.h"
#include "core/task/manifest_parser.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  try {
    const kwb::Task task = kwb::parseManifest(text, "fuzz/task.toml", {});
    try {
      (void)kwb::parseLineageManifest(text, "fuzz/lineage/lineage.toml", {}, task);
    } catch (const kwb::ManifestError &e) {
      check(std::string(e.what()).size() < 64 * 1024);
    }
  } catch (const kwb::ManifestError &e) {
    // Messages are escaped and capped: a 10 MB key gave a 10 MB message.
    check(std::string(e.what()).size() < 64 * 1024);
  } catch (...) {
    check(false);  // not a ManifestError: the parser let something through
  }
  return 0;
}
