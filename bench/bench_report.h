#pragma once
// What every benchmark program shares: the record of where a figure was measured (date, GPU,
// driver, commit), an aligned text table, a median, and writing the JSON file. Benchmarks are
// programs, not timed tests: each prints a table and writes JSON (bench/README.md).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu/device_info.h"

namespace kwb::bench {

// Exit statuses shared by the bench programs (as `kwb eval`: 3 = not run, no CUDA device).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoDevice = 3;

// The commit the figures belong to: $KWB_BENCH_COMMIT (set by bench/run-on-gpu.sh from the
// bundle's COMMIT file), else the commit the program was configured from.
std::string benchCommit();

// {"program", "date" (UTC, ISO 8601), "commit", "gpu", "compute_capability", "driver_version",
//  "sm_count", "l2_bytes", "host"} for the device `ordinal` of `inventory` (GPU fields empty
// when there is none).
nlohmann::json benchMeta(const std::string &program, const GpuInventory &inventory, int ordinal = 0);

// The device `ordinal`, or nullptr after printing "PROGRAM: no CUDA device (...)" to stderr.
const DeviceInfo *requireDevice(const std::string &program, const GpuInventory &inventory, int ordinal = 0);

// "sm_90" for a device of compute capability 9.0.
std::string archOf(const DeviceInfo &device);

// Median of the values (linear interpolation for an even count); 0 for none.
double median(std::vector<double> values);

// The median, the 95th percentile (the value at rank floor(0.95 n)) and the largest; zeros for none.
struct Spread {
  double median = 0, p95 = 0, max = 0;
};
Spread spreadOf(std::vector<double> values);

// Writes `j` (indented) to `path`, creating its folder; false with a message on stderr on error.
bool writeJson(const std::filesystem::path &path, const nlohmann::json &j);

std::string readText(const std::filesystem::path &path);  // throws std::runtime_error

// "0.123" seconds / "12.3 µs" style figures for tables.
std::string formatSeconds(double seconds);
std::string formatMs(double ms);
std::string formatNumber(double value, int decimals);

// A text table: the first row is the header; columns are padded to their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header);
  void add(std::vector<std::string> row);
  std::string str() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace kwb::bench
