// kwb-test-store-writer <db> <batches> <rows-per-batch> <blob-bytes>
//
// The crash test's victim. Opens the workspace, records one task, then writes <batches> batches,
// each ONE transaction of <rows-per-batch> candidates whose sources are unique texts of
// <blob-bytes> bytes. It reports on stdout, flushed line by line:
//   ready <task-id>      the workspace is open
//   begin <n>            batch n is about to start
//   half <n>             half of batch n's rows are written, not committed
//   committed <n>        batch n's COMMIT has returned
//   done                 every batch is committed
// Each source text starts with "batch <n> row <r>\n" and each candidate is labelled "<n>:<r>",
// so the test can check every committed row. Links kwbcore only (no Qt).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/store/workspace.h"

namespace {

void say(const std::string &line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

long long parseCount(const char *text, const char *what) {
  char *end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0) {
    std::fprintf(stderr, "kwb-test-store-writer: %s must be a positive number, not \"%s\"\n", what, text);
    std::exit(2);
  }
  return value;
}

// A unique text of exactly `size` bytes (at least the header): a header naming the row, then
// letters from a generator seeded by the row, so no two sources share content.
std::string payload(long long batch, long long row, std::size_t size) {
  std::string text = "batch " + std::to_string(batch) + " row " + std::to_string(row) + "\n";
  std::uint64_t state = (static_cast<std::uint64_t>(batch) << 32) ^ static_cast<std::uint64_t>(row);
  state = state * 0x9E3779B97F4A7C15ull + 1;
  text.reserve(size);
  while (text.size() < size) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    text.push_back(static_cast<char>('a' + state % 26));
  }
  return text;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: kwb-test-store-writer <db> <batches> <rows-per-batch> <blob-bytes>\n");
    return 2;
  }
  const long long batches = parseCount(argv[2], "batches");
  const long long rows = parseCount(argv[3], "rows-per-batch");
  const auto bytes = static_cast<std::size_t>(parseCount(argv[4], "blob-bytes"));

  try {
    auto workspace = kwb::Workspace::open(argv[1]);
    const kwb::TaskRecord task = workspace->recordTaskOpened("crash-test", "/kwb-crash-test", "");
    say("ready " + std::to_string(task.id));

    for (long long batch = 1; batch <= batches; ++batch) {
      say("begin " + std::to_string(batch));
      workspace->database().transaction([&] {
        for (long long row = 0; row < rows; ++row) {
          if (row == rows / 2) say("half " + std::to_string(batch));
          workspace->addCandidate(task.id, payload(batch, row, bytes),
                                  std::to_string(batch) + ":" + std::to_string(row));
        }
      });
      say("committed " + std::to_string(batch));
    }
    say("done");
  } catch (const std::exception &error) {
    std::fprintf(stderr, "kwb-test-store-writer: %s\n", error.what());
    return 1;
  }
  return 0;
}
