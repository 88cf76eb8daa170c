#pragma once
// For the gpu suites: skip, saying why, where there is no CUDA device; else the kwb-worker that
// ctest names in $KWB_WORKER (a failure when it names none).
#include <QtTest>

#include <cstdlib>
#include <string>

#include "core/gpu/device_info.h"

// In initTestCase: sets `worker` (a std::string) or skips or fails the suite.
#define KWB_REQUIRE_GPU_WORKER(worker)                                                            \
  do {                                                                                            \
    const auto inventory_ = ::kwb::probeGpus();                                                   \
    if (!inventory_.hasDevices()) QSKIP(("no CUDA device: " + inventory_.problem).c_str());       \
    const char *env_ = std::getenv("KWB_WORKER");                                                 \
    QVERIFY2(env_ && *env_, "run through ctest: KWB_WORKER names kwb-worker");                    \
    (worker) = env_;                                                                              \
  } while (false)
