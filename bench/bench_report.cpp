#include "bench/bench_report.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace kwb::bench {

std::string benchCommit() {
  if (const char *env = std::getenv("KWB_BENCH_COMMIT"); env && *env) return env;
  return KWB_BENCH_GIT_COMMIT;
}

nlohmann::json benchMeta(const std::string &program, const GpuInventory &inventory, int ordinal) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  nlohmann::json meta = {{"program", program},
                         {"date", date},
                         {"commit", benchCommit()},
                         {"host", host},
                         {"driver_version", inventory.driverVersion},
                         {"gpu", ""},
                         {"compute_capability", ""},
                         {"sm_count", 0},
                         {"l2_bytes", 0}};
  for (const auto &d : inventory.devices)
    if (d.ordinal == ordinal) {
      meta["gpu"] = d.name;
      meta["compute_capability"] = d.computeCapability();
      meta["sm_count"] = d.smCount;
      meta["l2_bytes"] = d.l2CacheBytes;
    }
  if (!inventory.hasDevices()) meta["gpu_problem"] = inventory.problem;
  return meta;
}

const DeviceInfo *requireDevice(const std::string &program, const GpuInventory &inventory, int ordinal) {
  for (const auto &d : inventory.devices)
    if (d.ordinal == ordinal) return &d;
  std::cerr << program << ": no CUDA device"
            << (inventory.hasDevices() ? " " + std::to_string(ordinal)
                                       : (inventory.problem.empty() ? "" : " (" + inventory.problem + ")"))
            << ": nothing measured\n";
  return nullptr;
}

std::string archOf(const DeviceInfo &device) {
  return "sm_" + std::to_string(device.ccMajor) + std::to_string(device.ccMinor);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

Spread spreadOf(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.median = median(values);
  s.p95 = values[std::min(values.size() - 1, static_cast<std::size_t>(0.95 * static_cast<double>(values.size())))];
  s.max = values.back();
  return s;
}

bool writeJson(const std::filesystem::path &path, const nlohmann::json &j) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const auto temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      std::cerr << "cannot write " << path.string() << "\n";
      return false;
    }
    out << j.dump(2) << "\n";
    if (!out) {
      std::cerr << "cannot write " << path.string() << "\n";
      return false;
    }
  }
  // Renamed into place, so a run stopped by a time bound leaves the last whole file.
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::cerr << "cannot write " << path.string() << ": " << ec.message() << "\n";
    return false;
  }
  return true;
}

std::string readText(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string formatNumber(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string formatSeconds(double seconds) { return formatNumber(seconds, 3); }

std::string formatMs(double ms) {
  char buf[64];
  if (ms < 1.0) std::snprintf(buf, sizeof buf, "%.2f us", ms * 1000.0);
  else std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  return buf;
}

Table::Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }

void Table::add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

std::string Table::str() const {
  std::vector<std::size_t> width;
  for (const auto &row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::ostringstream out;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    for (std::size_t i = 0; i < rows_[r].size(); ++i) {
      out << rows_[r][i];
      if (i + 1 < rows_[r].size()) out << std::string(width[i] - rows_[r][i].size() + 2, ' ');
    }
    out << "\n";
    if (r == 0) {
      std::size_t total = 0;
      for (auto w : width) total += w + 2;
      out << std::string(total > 2 ? total - 2 : total, '-') << "\n";
    }
  }
  return out.str();
}

}  // namespace kwb::bench
