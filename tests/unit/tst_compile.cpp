// Compiling candidates: NVRTC (device-only) and nvcc (host launcher) through the Compiler front
// door, diagnostics and resource figures from the real compilers' output, the disk cache, PTX and
// SASS text. Needs the CUDA toolkit (NVRTC, nvcc), not a GPU; skips with the reason without it.
#include <QtTest>

#include <elf.h>

#include <algorithm>
#include <csignal>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "core/process/child_process.h"
#include "core/compile/compiler.h"
#include "core/compile/diagnostics.h"
#include "core/compile/disassembly.h"
#include "core/compile/elf_symbols.h"
#include "core/compile/resource_report.h"
#include "core/compile/nvcc_compiler.h"
#include "core/sandbox/sandbox.h"
#include "core/task/task_catalog.h"
#include "helpers/process_wait.h"
#include "helpers/test_files.h"

using namespace kwb;
namespace fs = std::filesystem;

Q_DECLARE_METATYPE(kwb::SandboxPreference)

using kwb::test::readFile;

namespace {

std::string describe(const std::vector<Diagnostic> &diagnostics) {
  std::string out;
  for (const auto &d : diagnostics) out += formatDiagnostic(d) + "\n";
  return out;
}

// The first diagnostic of `severity`, or null.
const Diagnostic *first(const CompileResult &r, Diagnostic::Severity severity) {
  for (const auto &d : r.diagnostics)
    if (d.severity == severity) return &d;
  return nullptr;
}

const KernelResources *kernel(const CompileResult &r, const std::string &name) {
  for (const auto &k : r.kernels)
    if (k.name == name) return &k;
  return nullptr;
}

// Where two results differ ("" when they do not), cacheHit and seconds aside.
std::string difference(const CompileResult &a, const CompileResult &b) {
  if (a.ok != b.ok) return "ok";
  if (a.form != b.form) return "form";
  if (a.arch != b.arch) return "arch";
  if (a.diagnostics != b.diagnostics) return "diagnostics:\n" + describe(a.diagnostics) + "vs\n" + describe(b.diagnostics);
  if (a.log != b.log) return "log";
  if (a.image != b.image) return "image";
  if (a.kernels != b.kernels) return "kernels";
  if (a.toolkitVersion != b.toolkitVersion) return "toolkitVersion";
  if (a.cacheKey != b.cacheKey) return "cacheKey";
  return {};
}

CompileRequest deviceRequest(std::string source, std::vector<std::string> kernels = {}) {
  CompileRequest r;
  r.source = std::move(source);
  r.sourceName = "candidate.cu";
  r.expectedKernels = std::move(kernels);
  return r;
}

const char *const kScaleKernel = R"(extern "C" __global__ void scale(float *x, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= SCALE;
}
)";

const char *const kHostLauncher = R"(#include <cuda_runtime.h>

extern "C" __global__ void twice(float *x, long long n) {
  __shared__ float unusedTile[4];
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {
  float *x = *static_cast<float *const *>(args[0]);
  const long long n = *static_cast<const long long *>(args[1]);
  int unused = 0;
  twice<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, n);
  return cudaGetLastError();
}
)";

// Sets an environment variable for the life of the object.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string &value) : name(std::move(n)) {
    if (const char *v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

struct Timings {
  double nvrtcCold = -1, nvrtcWarm = -1, cacheMiss = -1, cacheHit = -1, nvcc = -1, nvccHit = -1;
};
Timings timings;

}  // namespace

class TestCompile : public QObject {
  Q_OBJECT

  fs::path cacheRoot_;
  bool nvrtc_ = false;
  bool nvcc_ = false;
  QString nvrtcProblem_, nvccProblem_;

  Compiler uncached() const { return Compiler(CompilerOptions{.cacheDirectory = cacheRoot_ / "unused", .useCache = false}); }
  Compiler cached(const std::string &name) const {
    const fs::path dir = cacheRoot_ / name;
    fs::remove_all(dir);
    return Compiler(CompilerOptions{.cacheDirectory = dir});
  }

 private slots:
  void initTestCase() {
    cacheRoot_ = fs::path(KWB_TEST_OUTPUT_DIR) / ("compile-" + std::to_string(QCoreApplication::applicationPid()));
    fs::remove_all(cacheRoot_);
    fs::create_directories(cacheRoot_);
    const auto &nvrtc = NvrtcCompiler::shared();
    nvrtc_ = nvrtc.available();
    nvrtcProblem_ = QString::fromStdString(nvrtc.problem());
    NvccCompiler nvcc;
    nvcc_ = nvcc.available() && !nvcc.version().empty();
    nvccProblem_ = QString::fromStdString(nvcc.available() ? nvcc.versionProblem() : nvcc.problem());
    qInfo("NVRTC: %s", nvrtc_ ? (nvrtc.version() + " at " + nvrtc.libraryPath()).c_str() : qPrintable(nvrtcProblem_));
    qInfo("nvcc: %s", nvcc_ ? (nvcc.version() + " at " + nvcc.path().string()).c_str() : qPrintable(nvccProblem_));
  }

  void cleanupTestCase() {
    qInfo("compile times: NVRTC cold %.1f ms, warm %.1f ms; cached compile: miss %.1f ms, hit %.2f ms; "
          "nvcc %.0f ms, nvcc cache hit %.2f ms",
          timings.nvrtcCold * 1e3, timings.nvrtcWarm * 1e3, timings.cacheMiss * 1e3, timings.cacheHit * 1e3,
          timings.nvcc * 1e3, timings.nvccHit * 1e3);
    fs::remove_all(cacheRoot_);
  }

  // First, so the first NVRTC compile of the process is measured cold.
  void nvrtcColdAndWarm() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    auto compiler = uncached();
    auto request = deviceRequest(kScaleKernel, {"scale"});
    request.defines = {{"SCALE", "2.0f"}};
    const auto cold = compiler.compile(request);
    QVERIFY2(cold.ok, describe(cold.diagnostics).c_str());
    const auto warm = compiler.compile(request);
    QVERIFY2(warm.ok, describe(warm.diagnostics).c_str());
    QVERIFY(!warm.cacheHit);
    QCOMPARE(warm.toolkitVersion, NvrtcCompiler::shared().version());
    QVERIFY(warm.toolkitVersion.rfind("1", 0) == 0);  // "12.x" or "13.x"
    timings.nvrtcCold = cold.seconds;
    timings.nvrtcWarm = warm.seconds;
  }

  void detectSourceForm_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<bool>("host");
    QTest::newRow("kernel only") << R"(extern "C" __global__ void k(float *x) { x[0] = 1; })" << false;
    QTest::newRow("launcher") << QString(kHostLauncher) << true;
    QTest::newRow("declared, spaced") << "extern \"C\" cudaError_t kwb_launch (void *const *, cudaStream_t);" << true;
    QTest::newRow("in a comment") << "// calls kwb_launch(args, stream)\n/* kwb_launch( */ __global__ void k() {}" << false;
    QTest::newRow("in a string") << "const char *s = \"kwb_launch(\"; __global__ void k() {}" << false;
    QTest::newRow("longer names") << "void my_kwb_launch(int); void kwb_launch_v2(int);" << false;
    QTest::newRow("no call") << "int kwb_launch = 3;" << false;
  }

  void detectSourceForm() {
    QFETCH(QString, source);
    QFETCH(bool, host);
    QCOMPARE(kwb::detectSourceForm(source.toStdString()) == SourceForm::HostLauncher, host);
  }

  void bundledKernelsCompileForSeveralArchitectures_data() {
    QTest::addColumn<QString>("folder");
    QTest::addColumn<QString>("arch");
    const auto entries = listTasks(KWB_SOURCE_DIR "/kernels");
    QVERIFY(entries.size() >= 2);
    for (const auto &e : entries)
      for (const char *arch : {"sm_80", "sm_90", "sm_120"})
        QTest::newRow((e.folder.filename().string() + "/" + arch).c_str())
            << QString::fromStdString(e.folder.string()) << arch;
  }

  void bundledKernelsCompileForSeveralArchitectures() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    QFETCH(QString, folder);
    QFETCH(QString, arch);
    const auto entries = listTasks(folder.toStdString());
    QCOMPARE(entries.size(), std::size_t(1));
    QVERIFY2(entries[0].task, entries[0].error.c_str());
    const Task &task = *entries[0].task;
    auto compiler = uncached();

    // The starter through the task's own request (tunables at their first values).
    const auto starter = task.folder / task.starterSource();
    auto request = requestFor(task, readFile(starter), starter.string(), arch.toStdString(), {});
    QCOMPARE(request.form, SourceForm::DeviceOnly);
    auto result = compiler.compile(request);
    QVERIFY2(result.ok, describe(result.diagnostics).c_str());
    QCOMPARE(result.arch, arch.toStdString());
    const auto *k = kernel(result, task.launch ? task.launch->kernel : task.reference.launch.kernel);
    QVERIFY(k);
    QVERIFY(k->registers > 0);
    QVERIFY(k->constantBytes > 0);  // the kernel's parameters live in constant bank 0
    const auto elf = readElf(result.image);
    QVERIFY(elf);
    QCOMPARE(int(elf->machine), int(EM_CUDA));

    // The reference, whose kernel the reference launch names.
    const auto reference = task.folder / task.reference.source;
    auto refRequest = deviceRequest(readFile(reference), {task.reference.launch.kernel});
    refRequest.sourceName = reference.string();
    refRequest.arch = arch.toStdString();
    result = compiler.compile(refRequest);
    QVERIFY2(result.ok, describe(result.diagnostics).c_str());
    QVERIFY(kernel(result, task.reference.launch.kernel));
  }

  void requestForTask() {
    const auto entries = listTasks(KWB_SOURCE_DIR "/kernels/softmax");
    QCOMPARE(entries.size(), std::size_t(1));
    QVERIFY2(entries[0].task, entries[0].error.c_str());
    const Task &task = *entries[0].task;
    const std::string source = readFile(task.folder / task.starterSource());
    auto request = requestFor(task, source, "softmax.cu", "sm_90", {{"BLOCK", 512}});
    QCOMPARE(request.form, SourceForm::DeviceOnly);
    QCOMPARE(request.arch, std::string("sm_90"));
    QCOMPARE(request.sourceName, std::string("softmax.cu"));
    QCOMPARE(request.defines.size(), std::size_t(1));
    QCOMPARE(request.defines[0].first, std::string("BLOCK"));
    QCOMPARE(request.defines[0].second, std::string("512"));
    QCOMPARE(request.expectedKernels, std::vector<std::string>{"softmax"});
    // Not given: the tunable's first value.
    request = requestFor(task, source, "softmax.cu", "sm_90", {});
    QCOMPARE(request.defines[0].second, std::to_string(task.tunables[0].values.front()));
    // A name the task does not know.
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, requestFor(task, source, "softmax.cu", "sm_90", {{"TILE", 8}}));
    // A host launcher needs no named kernel.
    request = requestFor(task, kHostLauncher, "launcher.cu", "sm_90", {});
    QCOMPARE(request.form, SourceForm::HostLauncher);
    QVERIFY(request.expectedKernels.empty());
  }

  void syntaxErrorHasLineAndColumn() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    const std::string source = "extern \"C\" __global__ void k(float *x) {\n"  // 1
                               "  // a comment\n"                             // 2
                               "  float y = 2.0f;\n"                          // 3
                               "  x[threadIdx.x] = y + undefined_thing;\n"    // 4: column 24
                               "\tx[0] =\tnothere;\n"                         // 5: column 9 (tabs count 1)
                               "}\n";
    auto request = deviceRequest(source, {"k"});
    request.sourceName = "my_kernel.cu";
    const auto r = uncached().compile(request);
    QVERIFY(!r.ok);
    QVERIFY(r.image.empty());
    std::vector<const Diagnostic *> errors;
    for (const auto &d : r.diagnostics)
      if (d.severity == Diagnostic::Severity::Error) errors.push_back(&d);
    QVERIFY2(errors.size() == 2, describe(r.diagnostics).c_str());
    QCOMPARE(errors[0]->file, std::string("my_kernel.cu"));
    QCOMPARE(errors[0]->line, 4);
    QCOMPARE(errors[0]->column, 24);
    QCOMPARE(errors[0]->message, std::string("identifier \"undefined_thing\" is undefined"));
    QCOMPARE(errors[1]->line, 5);
    QCOMPARE(errors[1]->column, 9);
    QVERIFY(r.log.find("undefined_thing") != std::string::npos);
  }

  // Issue 17, 6: NVRTC's 'At end of source: error: expected a "}"' has no file or line; it was
  // dropped and only its notes were shown. It is an error on the source's last line.
  void errorAtTheEndOfTheSource() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    auto request = deviceRequest("extern \"C\" __global__ void k(float *x) {\n  if (x) {\n    x[0] = 1;\n", {"k"});
    request.sourceName = "open.cu";
    const auto r = uncached().compile(request);
    QVERIFY(!r.ok);
    std::vector<const Diagnostic *> errors;
    for (const auto &d : r.diagnostics)
      if (d.severity == Diagnostic::Severity::Error && d.message.find("expected a") != std::string::npos) errors.push_back(&d);
    QVERIFY2(errors.size() == 2, describe(r.diagnostics).c_str());
    QCOMPARE(errors[0]->file, std::string("open.cu"));
    QCOMPARE(errors[0]->line, 3);
    QCOMPARE(errors[0]->message, std::string("expected a \"}\" (at the end of the source)"));
  }

  void warningsAndNotesAreParsed() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    const std::string source = "template <typename T> __device__ T twice(T v) { return v.nope(); }\n"  // 1: col 57
                               "extern \"C\" __global__ void k(float *x) {\n"                          // 2
                               "  int unused = 3;\n"                                                   // 3: col 7
                               "  #pragma not_a_pragma\n"                                              // 4
                               "  x[0] = twice(x[1]);\n"                                               // 5
                               "}\n";
    const auto r = uncached().compile(deviceRequest(source, {"k"}));
    QVERIFY(!r.ok);
    const Diagnostic *warning = nullptr;
    for (const auto &d : r.diagnostics)
      if (d.severity == Diagnostic::Severity::Warning && d.code == "177-D") warning = &d;
    QVERIFY2(warning, describe(r.diagnostics).c_str());
    QCOMPARE(warning->line, 3);
    QCOMPARE(warning->column, 7);
    QCOMPARE(warning->code, std::string("177-D"));
    QCOMPARE(warning->message, std::string("variable \"unused\" was declared but never referenced"));
    int warnings = 0;
    for (const auto &d : r.diagnostics) warnings += d.severity == Diagnostic::Severity::Warning;
    QCOMPARE(warnings, 2);  // and the unknown pragma

    const auto *error = first(r, Diagnostic::Severity::Error);
    QVERIFY(error);
    QCOMPARE(error->line, 1);
    QCOMPARE(error->column, 56);
    QVERIFY(error->message.find("must have class type") != std::string::npos);
    // The instantiation that caused it, as a note pointing at its line.
    const auto *note = first(r, Diagnostic::Severity::Note);
    QVERIFY2(note, describe(r.diagnostics).c_str());
    QCOMPARE(note->line, 5);
    QVERIFY(note->message.find("instantiation of") != std::string::npos);

    // A warning alone leaves the compile successful.
    const auto ok = uncached().compile(deviceRequest("extern \"C\" __global__ void k(float *x) {\n  int unused = 3;\n}\n", {"k"}));
    QVERIFY2(ok.ok, describe(ok.diagnostics).c_str());
    QCOMPARE(ok.diagnostics.size(), std::size_t(1));
    QCOMPARE(ok.diagnostics[0].severity, Diagnostic::Severity::Warning);
  }

  void missingKernelIsAClearError() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    auto compiler = uncached();
    auto r = compiler.compile(deviceRequest(
        "extern \"C\" __global__ void softmax_v2(float *x) { x[0] = 0; }\n", {"softmax"}));
    QVERIFY(!r.ok);
    auto *error = first(r, Diagnostic::Severity::Error);
    QVERIFY(error);
    QCOMPARE(error->message, std::string("kernel 'softmax' not found; the source defines: softmax_v2"));
    QCOMPARE(error->file, std::string("candidate.cu"));
    QCOMPARE(error->line, 1);

    // Right name, C++ linkage: the symbol is mangled, and the message says what to do.
    r = compiler.compile(deviceRequest("__global__ void softmax(float *x) { x[0] = 0; }\n", {"softmax"}));
    QVERIFY(!r.ok);
    error = first(r, Diagnostic::Severity::Error);
    QVERIFY(error);
    QVERIFY2(error->message.find("C++ linkage") != std::string::npos, error->message.c_str());
    QVERIFY2(error->message.find("extern \"C\"") != std::string::npos, error->message.c_str());

    // No kernel at all.
    r = compiler.compile(deviceRequest("__device__ float f(float x) { return x; }\n", {"softmax"}));
    QVERIFY(!r.ok);
    QVERIFY(first(r, Diagnostic::Severity::Error)->message.find("defines no kernel") != std::string::npos);
  }

  // NVRTC runs in this process, outside the sandbox: a device-only source may include the
  // toolkit's headers by name only, never a file of the machine.
  void deviceOnlyIncludesAreLimitedToTheToolkit() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    const fs::path secret = fs::path(std::string(KWB_TEST_OUTPUT_DIR)) / "nvrtc-secret.h";
    {
      std::ofstream out(secret);
      out << "THE-SECRET-TEXT\n";
    }
    auto compiler = uncached();
    const std::string kernel = "extern \"C\" __global__ void softmax(float *x) { x[0] = 0; }\n";
    struct Case {
      std::string include;
      std::string says;
    };
    const std::vector<Case> cases = {
        {"#include \"" + secret.string() + "\"", "self-contained"},
        {"#include <" + secret.string() + ">", "toolkit's own headers"},
        {"  #  include <../../../../../../.." + secret.string() + ">", "no '..'"},
        {"#define F \"" + secret.string() + "\"\n#include F", "computed"},
        {"#include_next \"x.h\"", "self-contained"},
    };
    for (const auto &c : cases) {
      const auto r = compiler.compile(deviceRequest(c.include + "\n" + kernel, {"softmax"}));
      QVERIFY2(!r.ok, c.include.c_str());
      const auto *error = first(r, Diagnostic::Severity::Error);
      QVERIFY(error);
      QVERIFY2(error->message.find(c.says) != std::string::npos, error->message.c_str());
      QCOMPARE(error->line, c.include.find('\n') == std::string::npos ? 1 : 2);
      QVERIFY(r.log.find("THE-SECRET-TEXT") == std::string::npos);
      for (const auto &d : r.diagnostics) QVERIFY(d.message.find("THE-SECRET-TEXT") == std::string::npos);
    }
    // Toolkit headers by name, and an include in a comment or a string, are fine.
    const auto ok = compiler.compile(deviceRequest("#include <cuda_fp16.h>\n// #include \"/etc/passwd\"\n"
                                                   "__device__ const char *s = \"#include </etc/passwd>\";\n" + kernel,
                                                   {"softmax"}));
    QVERIFY2(ok.ok, ok.log.c_str());
  }

  void resourceFigures() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    const std::string source = R"(
extern "C" __global__ void staged(const float *in, float *out) {
  __shared__ float tile[1024];  // 4 KiB
  tile[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[1023 - threadIdx.x];
}
extern "C" __global__ void crowded(float *x, int n) {
  float a[24];
#pragma unroll
  for (int i = 0; i < 24; ++i) a[i] = x[i * n + threadIdx.x];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 24; ++i) s += a[i] * a[23 - i] * x[i + 7];
#pragma unroll
  for (int i = 0; i < 24; ++i) x[i * n + threadIdx.x + 1] = a[i] * s;
}
)";
    auto request = deviceRequest(source, {"staged", "crowded"});
    request.extraOptions = {"-maxrregcount=24"};  // the lowest sm_90 takes: forces spills
    const auto r = uncached().compile(request);
    QVERIFY2(r.ok, (describe(r.diagnostics) + r.log).c_str());
    const auto *staged = kernel(r, "staged");
    const auto *crowded = kernel(r, "crowded");
    QVERIFY2(staged && crowded, r.log.c_str());
    QVERIFY(staged->sharedStaticBytes >= 4096);
    QVERIFY(staged->registers > 0);
    QVERIFY(staged->barriers >= 1);
    QCOMPARE(staged->spillStoreBytes, 0);
    QVERIFY2(crowded->spillStoreBytes > 0 && crowded->spillLoadBytes > 0, r.log.c_str());
    QVERIFY(crowded->stackFrameBytes > 0);
    QVERIFY(crowded->registers > 0 && crowded->registers <= 24);
    QVERIFY(crowded->constantBytes > 0);
  }

  void resourceReportFormats() {
    // Older ptxas wording (cmem printed), nvcc's unprefixed frame line, a device function's
    // frame, and a second architecture that is left out.
    const std::string log = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z4gemmPf' for 'sm_80'
ptxas info    : Function properties for _Z4gemmPf
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, 2048 bytes smem, 364 bytes cmem[0], 8 bytes cmem[2]
ptxas info    : Function properties for _Z6helperf
    32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z4gemmPf' for 'sm_90'
ptxas info    : Function properties for _Z4gemmPf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 2048 bytes smem
)";
    auto kernels = parseResourceReport(log, "sm_80");
    QCOMPARE(kernels.size(), std::size_t(1));
    QCOMPARE(kernels[0].name, std::string("_Z4gemmPf"));
    QCOMPARE(kernels[0].registers, 40);
    QCOMPARE(kernels[0].sharedStaticBytes, 2048);
    QCOMPARE(kernels[0].constantBytes, 364);
    QCOMPARE(kernels[0].stackFrameBytes, 16);
    QCOMPARE(kernels[0].spillStoreBytes, 8);
    QCOMPARE(kernels[0].spillLoadBytes, 12);
    kernels = parseResourceReport(log, "sm_90");
    QCOMPARE(kernels.size(), std::size_t(1));
    QCOMPARE(kernels[0].registers, 64);
    QCOMPARE(kernels[0].barriers, 1);
    QCOMPARE(kernels[0].stackFrameBytes, 0);
    QCOMPARE(parseResourceReport(log).size(), std::size_t(2));
  }

  void diagnosticFormats_data() {
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("lineNumber");
    QTest::addColumn<int>("column");
    QTest::addColumn<int>("severity");
    QTest::addColumn<QString>("message");
    QTest::addColumn<QString>("code");
    const int E = int(Diagnostic::Severity::Error), W = int(Diagnostic::Severity::Warning),
              N = int(Diagnostic::Severity::Note);
    QTest::newRow("gcc error") << "/tmp/kwb-nvcc-x/cand.cu:12:5: error: 'foo' was not declared in this scope"
                               << "src/cand.cu" << 12 << 5 << E << "'foo' was not declared in this scope" << "";
    QTest::newRow("gcc warning") << "cand.cu:7:9: warning: unused variable 'x' [-Wunused-variable]" << "src/cand.cu" << 7
                                 << 9 << W << "unused variable 'x'" << "-Wunused-variable";
    QTest::newRow("gcc note elsewhere") << "/usr/include/c++/12/bits/move.h:3:1: note: declared here"
                                        << "/usr/include/c++/12/bits/move.h" << 3 << 1 << N << "declared here" << "";
    QTest::newRow("gcc fatal") << "cand.cu:1:10: fatal error: nope.h: No such file or directory" << "src/cand.cu" << 1
                               << 10 << E << "nope.h: No such file or directory" << "";
    QTest::newRow("assembler") << "cand.cu:4: Error: no such instruction: `bogus'" << "src/cand.cu" << 4 << 0 << E
                               << "no such instruction: `bogus'" << "";
    QTest::newRow("ptxas with PTX line") << "ptxas /tmp/tmpxft_0001-6_cand.ptx, line 27; error   : Unknown modifier '.instr'"
                                         << "src/cand.cu" << 0 << 0 << E
                                         << "ptxas: Unknown modifier '.instr' (PTX line 27)" << "";
    QTest::newRow("ptxas warning") << "ptxas warning : Registers are spilled to local memory in function 'k'"
                                   << "src/cand.cu" << 0 << 0 << W
                                   << "ptxas: Registers are spilled to local memory in function 'k'" << "";
    QTest::newRow("ptxas fatal") << "ptxas fatal   : Unresolved extern function '_Z6helperf'" << "src/cand.cu" << 0 << 0
                                 << E << "ptxas: Unresolved extern function '_Z6helperf'" << "";
    QTest::newRow("nvlink") << "nvlink error   : Undefined reference to '_Z6helperf' in '/tmp/x.o'" << "src/cand.cu" << 0
                            << 0 << E << "nvlink: Undefined reference to '_Z6helperf' in '/tmp/x.o'" << "";
    QTest::newRow("nvcc fatal") << "nvcc fatal   : Unsupported gpu architecture 'compute_50'" << "src/cand.cu" << 0 << 0
                                << E << "nvcc: Unsupported gpu architecture 'compute_50'" << "";
    QTest::newRow("nvrtc option") << "nvrtc: error: unrecognized option -foo found" << "src/cand.cu" << 0 << 0 << E
                                  << "nvrtc: unrecognized option -foo found" << "";
    QTest::newRow("ld undefined") << "/usr/bin/ld: cand.o:(.text+0x1d): undefined reference to `helper()'"
                                  << "src/cand.cu" << 0 << 0 << E << "linker: undefined reference to `helper()'" << "";
    QTest::newRow("ld error") << "/usr/bin/ld: cannot find -lfoo: No such file or directory" << "src/cand.cu" << 0 << 0
                              << E << "linker: cannot find -lfoo: No such file or directory" << "";
    QTest::newRow("collect2") << "collect2: error: ld returned 1 exit status" << "src/cand.cu" << 0 << 0 << E
                              << "linking failed: ld returned 1 exit status" << "";
    QTest::newRow("front end remark") << "cand.cu(3): remark #550-D: variable \"y\" was set but never used"
                                      << "src/cand.cu" << 3 << 0 << N << "variable \"y\" was set but never used"
                                      << "550-D";
    QTest::newRow("front end catastrophic") << "cand.cu(1): catastrophic error: cannot open source file \"nope.h\""
                                            << "src/cand.cu" << 1 << 0 << E << "cannot open source file \"nope.h\"" << "";
    QTest::newRow("front end, header") << "/usr/local/cuda/include/cuda_fp16.hpp(10): error: something"
                                       << "/usr/local/cuda/include/cuda_fp16.hpp" << 10 << 0 << E << "something" << "";
  }

  void diagnosticFormats() {
    QFETCH(QString, line);
    QFETCH(QString, file);
    QFETCH(int, lineNumber);
    QFETCH(int, column);
    QFETCH(int, severity);
    QFETCH(QString, message);
    QFETCH(QString, code);
    const auto output = "ptxas info    : 0 bytes gmem\n" + line.toStdString() + "\n\n";
    const auto d = parseDiagnostics(output, DiagnosticContext{.compiledName = "cand.cu", .sourceName = "src/cand.cu"});
    QVERIFY2(d.size() == 1, describe(d).c_str());
    QCOMPARE(QString::fromStdString(d[0].file), file);
    QCOMPARE(d[0].line, lineNumber);
    QCOMPARE(d[0].column, column);
    QCOMPARE(int(d[0].severity), severity);
    QCOMPARE(QString::fromStdString(d[0].message), message);
    QCOMPARE(QString::fromStdString(d[0].code), code);
  }

  void diagnosticsIgnoreNoise() {
    // Summary lines, the suppression hint, gcc's context lines and the resource report are not diagnostics.
    const std::string output = R"(Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

cand.cu: In function 'cudaError_t kwb_launch(void* const*, cudaStream_t)':
    5 |   forbidden();
      |   ~~~~~~~~~^~
cand.cu: Assembler messages:
/usr/bin/ld: /tmp/cand.o: in function `kwb_launch':
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
2 errors detected in the compilation of "cand.cu".
Compilation terminated.
)";
    const auto d = parseDiagnostics(output, DiagnosticContext{.compiledName = "cand.cu", .sourceName = "cand.cu"});
    QVERIFY2(d.empty(), describe(d).c_str());
  }

  void nvrtcToolErrors() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    auto compiler = uncached();
    // ptxas rejects the PTX: an error from ptxas, not from the front end.
    auto r = compiler.compile(deviceRequest(
        "extern \"C\" __global__ void k(float *x) { asm volatile(\"bogus.instr.f32 %0;\" :: \"f\"(x[0])); }\n", {"k"}));
    QVERIFY(!r.ok);
    QVERIFY2(first(r, Diagnostic::Severity::Error)->message.rfind("ptxas: ", 0) == 0, describe(r.diagnostics).c_str());
    // An option NVRTC does not know.
    auto request = deviceRequest(kScaleKernel, {"scale"});
    request.defines = {{"SCALE", "2.0f"}};
    request.extraOptions = {"--no-such-option"};
    r = compiler.compile(request);
    QVERIFY(!r.ok);
    QVERIFY2(first(r, Diagnostic::Severity::Error)->message.find("--no-such-option") != std::string::npos,
             describe(r.diagnostics).c_str());
    // Architectures: one this NVRTC dropped, and a word that is none.
    request.extraOptions.clear();
    request.arch = "sm_50";
    r = compiler.compile(request);
    QVERIFY(!r.ok);
    QVERIFY2(first(r, Diagnostic::Severity::Error)->message.find("cannot compile for sm_50; it supports") != std::string::npos,
             describe(r.diagnostics).c_str());
    request.arch = "hopper";
    r = compiler.compile(request);
    QVERIFY(!r.ok);
    QVERIFY2(first(r, Diagnostic::Severity::Error)->message.find("not a GPU architecture") != std::string::npos,
             describe(r.diagnostics).c_str());
    // Toolkit headers are found (cuda_fp16.h is not built into NVRTC).
    r = compiler.compile(deviceRequest(
        "#include <cuda_fp16.h>\nextern \"C\" __global__ void h(__half *x) { x[0] = __float2half(1.0f); }\n", {"h"}));
    QVERIFY2(r.ok, describe(r.diagnostics).c_str());
  }

  void nvrtcTimeLimit() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    Compiler compiler(CompilerOptions{.cacheDirectory = cacheRoot_ / "nvrtc-limit", .timeLimit = std::chrono::milliseconds(1)});
    auto request = deviceRequest(kScaleKernel, {"scale"});
    request.defines = {{"SCALE", "3.0f"}};
    const auto r = compiler.compile(request);
    QVERIFY(!r.ok);
    QVERIFY2(first(r, Diagnostic::Severity::Error)->message == "NVRTC compile stopped after 0.001 s (the time limit)",
             describe(r.diagnostics).c_str());
    // Not cached: with time enough, the same request compiles.
    Compiler patient(CompilerOptions{.cacheDirectory = cacheRoot_ / "nvrtc-limit"});
    const auto again = patient.compile(request);
    QVERIFY(!again.cacheHit);
    QVERIFY2(again.ok, describe(again.diagnostics).c_str());
  }

  void cacheHitGivesTheSameResult() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    auto compiler = cached("hit");
    const auto entries = listTasks(KWB_SOURCE_DIR "/kernels/sgemm");
    QVERIFY(entries.size() == 1 && entries[0].task);
    const Task &task = *entries[0].task;
    const auto request = requestFor(task, readFile(task.folder / task.starterSource()), "sgemm.cu", "sm_90", {});
    const auto miss = compiler.compile(request);
    QVERIFY2(miss.ok, describe(miss.diagnostics).c_str());
    QVERIFY(!miss.cacheHit);
    QCOMPARE(miss.cacheKey.size(), std::size_t(32));
    QVERIFY(fs::exists(compiler.cache().imagePath(miss.cacheKey)));
    QVERIFY(fs::exists(compiler.cache().metadataPath(miss.cacheKey)));
    // The user's alone (issue 17, 6: they were 0644): entries 0600, a new cache folder 0700.
    const auto rw = fs::perms::owner_read | fs::perms::owner_write;
    QVERIFY(fs::status(compiler.cache().imagePath(miss.cacheKey)).permissions() == rw);
    QVERIFY(fs::status(compiler.cache().metadataPath(miss.cacheKey)).permissions() == rw);
    QVERIFY(fs::status(compiler.cache().directory()).permissions() == fs::perms::owner_all);
    const auto hit = compiler.compile(request);
    QVERIFY(hit.cacheHit);
    QVERIFY2(difference(miss, hit).empty(), difference(miss, hit).c_str());
    QVERIFY2(hit.seconds * 5 < miss.seconds, qPrintable(QString("hit %1 s, miss %2 s").arg(hit.seconds).arg(miss.seconds)));
    timings.cacheMiss = miss.seconds;
    timings.cacheHit = hit.seconds;

    // A fresh Compiler (another process, in effect) finds the entry too.
    Compiler other(CompilerOptions{.cacheDirectory = compiler.cache().directory()});
    QVERIFY(other.compile(request).cacheHit);

    // Failed compiles are cached as well, diagnostics and all.
    const auto broken = deviceRequest("extern \"C\" __global__ void k(float *x) { x[0] = nope; }\n", {"k"});
    const auto failed = compiler.compile(broken);
    QVERIFY(!failed.ok && !failed.cacheHit);
    const auto failedAgain = compiler.compile(broken);
    QVERIFY(failedAgain.cacheHit);
    QVERIFY2(difference(failed, failedAgain).empty(), difference(failed, failedAgain).c_str());
  }

  // Compilers of untrusted sources run with the allow-listed environment: an API key in ours
  // never reaches them (nor, through /proc/self/environ, a candidate's diagnostics).
  void untrustedChildrenGetNoSecrets() {
    qputenv("OPENAI_API_KEY", "sk-test-secret-123");
    qputenv("CUDA_VISIBLE_DEVICES", "0");
    ChildProcessRequest request{.argv = {"/usr/bin/env"}, .untrusted = true};
    auto run = runChildProcess(request);
    QVERIFY2(run.started && run.exitCode == 0, run.startError.c_str());
    QVERIFY2(run.output.find("sk-test-secret-123") == std::string::npos, run.output.c_str());
    QVERIFY(run.output.find("CUDA_VISIBLE_DEVICES=0") != std::string::npos);
    QVERIFY(run.output.find("PATH=") != std::string::npos);
    request.untrusted = false;  // trusted tools (nvcc --version) inherit everything
    run = runChildProcess(request);
    QVERIFY(run.output.find("OPENAI_API_KEY=sk-test-secret-123") != std::string::npos);
    qunsetenv("OPENAI_API_KEY");
    qunsetenv("CUDA_VISIBLE_DEVICES");
  }

  // What a child leaves running in its group when it exits is killed (a compiler's stray
  // helper), unless the caller keeps it (an ssh master on its way out of the group): then it runs
  // on. Past the time limit the whole group is killed all the same.
  void leftoversAreKilledUnlessKept() {
    ChildProcessRequest request{.argv = {"/bin/sh", "-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $!"}};
    for (const bool keep : {false, true}) {
      request.killLeftovers = !keep;
      const auto run = runChildProcess(request);
      const pid_t left = static_cast<pid_t>(std::atoi(run.output.c_str()));
      const auto stop = qScopeGuard([&] {
        if (left > 0) ::kill(left, SIGKILL);
      });
      QVERIFY2(run.succeeded() && left > 0, run.output.c_str());
      if (keep) {
        QVERIFY2(::kill(left, 0) == 0, "the kept background process is gone");
        QVERIFY(!kwb::test::waitForExit(left, std::chrono::milliseconds(300)));
      } else {
        QVERIFY2(kwb::test::waitForExit(left, std::chrono::seconds(10)), "the leftover still runs");
      }
    }
    request.argv = {"/bin/sh", "-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 60"};
    request.timeout = std::chrono::milliseconds(1500);
    const auto expired = runChildProcess(request);  // killLeftovers is still false
    const pid_t left = static_cast<pid_t>(std::atoi(expired.output.c_str()));
    const auto stop = qScopeGuard([&] {
      if (left > 0) ::kill(left, SIGKILL);
    });
    QVERIFY(expired.timedOut);
    QVERIFY2(left > 0, expired.output.c_str());
    QVERIFY2(kwb::test::waitForExit(left, std::chrono::seconds(10)), "the group outlived the time limit");
  }

  // A failure the compiler does not locate in the source (here nvcc itself failing, as with a
  // full disk) is not cached: the next compile tries again.
  void unlocatedFailureIsNotCached() {
    const fs::path dir = cacheRoot_ / "flaky-nvcc";
    fs::create_directories(dir);
    const fs::path script = dir / "nvcc";
    kwb::test::writeScript(script,
                           "if [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 13.0, V13.0.0'; exit 0; fi\n"
                           "echo 'nvcc fatal   : Could not open output file: No space left on device' >&2\nexit 1");
    Compiler compiler(CompilerOptions{.cacheDirectory = dir / "cache", .nvcc = script});
    CompileRequest request;
    request.form = SourceForm::HostLauncher;
    request.source = kHostLauncher;
    const auto first = compiler.compile(request);
    QVERIFY(!first.ok);
    const auto second = compiler.compile(request);
    QVERIFY(!second.ok);
    QVERIFY2(!second.cacheHit, "a failure with no place in the source was served from the cache");
  }

  void cacheKeyCoversTheInputs() {
    const auto base = [] {
      CompileRequest r = deviceRequest(kScaleKernel, {"scale"});
      r.defines = {{"SCALE", "2.0f"}, {"BLOCK", "128"}};
      return r;
    };
    const std::string toolkit = "nvrtc 13.0 /usr/local/cuda/lib64/libnvrtc.so.13 1";
    const std::string key = CompileCache::key(base(), toolkit);
    QCOMPARE(CompileCache::key(base(), toolkit), key);
    auto r = base();
    std::swap(r.defines[0], r.defines[1]);
    QCOMPARE(CompileCache::key(r, toolkit), key);  // defines are sorted

    std::vector<std::pair<const char *, CompileRequest>> changed;
    r = base(); r.arch = "sm_80"; changed.emplace_back("arch", r);
    r = base(); r.defines[0].second = "3.0f"; changed.emplace_back("define value", r);
    r = base(); r.defines.emplace_back("EXTRA", ""); changed.emplace_back("define added", r);
    r = base(); r.source += " "; changed.emplace_back("source", r);
    r = base(); r.extraOptions = {"-maxrregcount=32"}; changed.emplace_back("options", r);
    r = base(); r.lineInfo = false; changed.emplace_back("line info", r);
    r = base(); r.form = SourceForm::HostLauncher; changed.emplace_back("form", r);
    r = base(); r.sourceName = "other.cu"; changed.emplace_back("source name", r);
    r = base(); r.expectedKernels = {"other"}; changed.emplace_back("expected kernels", r);
    for (const auto &[what, request] : changed) QVERIFY2(CompileCache::key(request, toolkit) != key, what);
    QVERIFY(CompileCache::key(base(), "nvrtc 13.1 /usr/local/cuda/lib64/libnvrtc.so.13 1") != key);

    // Where the cache lives by default.
    const QByteArray saved = qgetenv("XDG_CACHE_HOME");
    qputenv("XDG_CACHE_HOME", "/somewhere/cache");
    QCOMPARE(CompileCache::defaultDirectory(), fs::path("/somewhere/cache/kernel-workbench/compile"));
    if (saved.isNull()) qunsetenv("XDG_CACHE_HOME"); else qputenv("XDG_CACHE_HOME", saved);
  }

  void corruptCacheEntryIsAMissAndIsRebuilt() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    auto compiler = cached("corrupt");
    auto request = deviceRequest(kScaleKernel, {"scale"});
    request.defines = {{"SCALE", "5.0f"}};
    const auto original = compiler.compile(request);
    QVERIFY2(original.ok, describe(original.diagnostics).c_str());
    const auto image = compiler.cache().imagePath(original.cacheKey);
    const auto metadata = compiler.cache().metadataPath(original.cacheKey);

    const auto damageAndCheck = [&](const std::string &what, const std::function<void()> &damage) {
      damage();
      const auto rebuilt = compiler.compile(request);
      QVERIFY2(!rebuilt.cacheHit, what.c_str());
      QVERIFY2(rebuilt.ok, what.c_str());
      QVERIFY2(rebuilt.image == original.image, what.c_str());
      const auto hit = compiler.compile(request);  // the entry was replaced by a whole one
      QVERIFY2(hit.cacheHit, what.c_str());
      // (The log differs from the first compile's only in ptxas's "Compile time" lines.)
      QVERIFY2(difference(rebuilt, hit).empty(), (what + ": " + difference(rebuilt, hit)).c_str());
    };
    damageAndCheck("image cut short", [&] { fs::resize_file(image, fs::file_size(image) / 2); });
    damageAndCheck("image flipped", [&] {
      std::string bytes = readFile(image);
      bytes[bytes.size() / 2] ^= 0x5a;
      std::ofstream(image, std::ios::binary | std::ios::trunc) << bytes;
    });
    damageAndCheck("metadata garbage", [&] { std::ofstream(metadata, std::ios::trunc) << "{\"format\": 1, \"key\""; });
    damageAndCheck("metadata without image", [&] { fs::remove(image); });
    damageAndCheck("image without metadata", [&] { fs::remove(metadata); });
    damageAndCheck("metadata of another format", [&] {
      std::string text = readFile(metadata);
      text.replace(text.find("\"format\": 1"), 11, "\"format\": 99");
      std::ofstream(metadata, std::ios::trunc) << text;
    });
    // No temporary files are left behind.
    for (const auto &entry : fs::directory_iterator(compiler.cache().directory()))
      QVERIFY2(entry.path().string().find(".tmp.") == std::string::npos, entry.path().c_str());
  }

  void concurrentCompiles() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    auto compiler = cached("concurrent");
    constexpr int kThreads = 8;
    std::vector<CompileResult> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        const std::string name = "kernel_" + std::to_string(t);
        std::string source = "extern \"C\" __global__ void " + name + "(float *x, int n) {\n";
        for (int i = 0; i <= t; ++i) source += "  if (threadIdx.x < n) x[threadIdx.x + " + std::to_string(i) + "] *= 1.5f;\n";
        source += "}\n";
        auto request = deviceRequest(source, {name});
        request.sourceName = name + ".cu";
        results[static_cast<std::size_t>(t)] = compiler.compile(request);
      });
    for (auto &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      const auto &r = results[static_cast<std::size_t>(t)];
      QVERIFY2(r.ok, describe(r.diagnostics).c_str());
      QVERIFY(kernel(r, "kernel_" + std::to_string(t)));
      const auto elf = readElf(r.image);
      QVERIFY(elf);
      QCOMPARE(cubinKernelNames(*elf), std::vector<std::string>{"kernel_" + std::to_string(t)});
    }
  }

  void hostLauncherCompilesWithNvcc() {
    if (!nvcc_) QSKIP(qPrintable("nvcc is not available: " + nvccProblem_));
    auto compiler = cached("nvcc");
    CompileRequest request;
    request.source = kHostLauncher;
    request.sourceName = "tasks/launcher.cu";
    request.form = kwb::detectSourceForm(request.source);
    QCOMPARE(request.form, SourceForm::HostLauncher);
    const auto r = compiler.compile(request);
    QVERIFY2(r.ok, (describe(r.diagnostics) + r.log).c_str());
    QCOMPARE(r.form, SourceForm::HostLauncher);
    QVERIFY(!r.toolkitVersion.empty());
    const auto elf = readElf(r.image);
    QVERIFY(elf);
    QCOMPARE(int(elf->machine), int(EM_X86_64));
    QVERIFY(exportsFunction(*elf, "kwb_launch"));
    const auto *k = kernel(r, "twice");
    QVERIFY2(k && k->registers > 0, r.log.c_str());
    // The front end's warnings, pointed at the source the user wrote: nvcc quotes the line
    // after preprocessing (__shared__ expanded), the column is still the source's.
    std::vector<const Diagnostic *> warnings;
    for (const auto &d : r.diagnostics)
      if (d.severity == Diagnostic::Severity::Warning) warnings.push_back(&d);
    QVERIFY2(warnings.size() == 2, describe(r.diagnostics).c_str());
    QCOMPARE(warnings[0]->file, std::string("tasks/launcher.cu"));
    QCOMPARE(warnings[0]->line, 4);
    QCOMPARE(warnings[0]->column, 20);
    QCOMPARE(warnings[0]->code, std::string("177-D"));
    QCOMPARE(warnings[1]->line, 12);
    QCOMPARE(warnings[1]->column, 7);
    timings.nvcc = r.seconds;
    const auto hit = compiler.compile(request);
    QVERIFY(hit.cacheHit);
    QVERIFY2(difference(r, hit).empty(), difference(r, hit).c_str());
    timings.nvccHit = hit.seconds;
  }

  // "sm_90" compiles for sm_90a, so code may use what only Hopper has (wgmma, setmaxnreg): both the
  // NVRTC path (device code) and the nvcc path (a host launcher), and ptxas's report is still read.
  void hopperOnlyInstructionsCompileForSm90() {
    if (!nvrtc_ || !nvcc_) QSKIP("NVRTC and nvcc are both needed here");
    const std::string body =
        "extern \"C\" __global__ void __launch_bounds__(384, 1) hopper(float *x) {\n"
        "  if (threadIdx.x < 128) asm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\\n\");\n"
        "  else asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\\n\");\n"
        "  asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
        "  x[threadIdx.x] = 1.f;\n"
        "}\n";
    auto compiler = uncached();
    auto device = deviceRequest(body, {"hopper"});
    const auto r = compiler.compile(device);
    QVERIFY2(r.ok, (describe(r.diagnostics) + r.log).c_str());
    QVERIFY2(kernel(r, "hopper"), r.log.c_str());
    CompileRequest launcher;
    launcher.source = body + "extern \"C\" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {\n"
                             "  hopper<<<1, 384, 0, stream>>>(*static_cast<float *const *>(args[0]));\n"
                             "  return cudaGetLastError();\n"
                             "}\n";
    launcher.sourceName = "hopper_launcher.cu";
    launcher.form = kwb::detectSourceForm(launcher.source);
    QCOMPARE(launcher.form, SourceForm::HostLauncher);
    const auto h = compiler.compile(launcher);
    QVERIFY2(h.ok, (describe(h.diagnostics) + h.log).c_str());
    QVERIFY2(kernel(h, "hopper"), h.log.c_str());
    QCOMPARE(h.arch, std::string("sm_90"));
  }

  void hostLauncherWithoutEntryPoint() {
    if (!nvcc_) QSKIP(qPrintable("nvcc is not available: " + nvccProblem_));
    auto compiler = uncached();
    CompileRequest request;
    request.form = SourceForm::HostLauncher;
    // kwb_launch with C++ linkage: the worker could not find it by name.
    request.source = std::string(kHostLauncher).replace(std::string(kHostLauncher).find("extern \"C\" cudaError_t"), 10, "");
    auto r = compiler.compile(request);
    QVERIFY(!r.ok);
    auto *error = first(r, Diagnostic::Severity::Error);
    QVERIFY2(error && error->message.find("C++ linkage") != std::string::npos, describe(r.diagnostics).c_str());
    // No entry point at all.
    request.source = "#include <cuda_runtime.h>\nextern \"C\" __global__ void k(float *x) { x[0] = 1; }\n"
                     "extern \"C\" cudaError_t launch(float *x) { k<<<1, 1>>>(x); return cudaGetLastError(); }\n";
    r = compiler.compile(request);
    QVERIFY(!r.ok);
    error = first(r, Diagnostic::Severity::Error);
    QVERIFY2(error && error->message.find("does not export kwb_launch") != std::string::npos, describe(r.diagnostics).c_str());
    QCOMPARE(error->file, std::string("candidate.cu"));
  }

  void hostCompilerErrorFromNvcc() {
    if (!nvcc_) QSKIP(qPrintable("nvcc is not available: " + nvccProblem_));
    // An error only the host compiler (gcc) finds, reported in its own format.
    CompileRequest request;
    request.form = SourceForm::HostLauncher;
    request.sourceName = "host_error.cu";
    request.source = "#include <cuda_runtime.h>\n"
                     "__attribute__((error(\"do not call\"))) void forbidden();\n"
                     "extern \"C\" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {\n"
                     "  (void)args; (void)stream;\n"
                     "  forbidden();\n"
                     "  return cudaSuccess;\n"
                     "}\n";
    const auto r = uncached().compile(request);
    QVERIFY(!r.ok);
    const auto *error = first(r, Diagnostic::Severity::Error);
    QVERIFY2(error, (describe(r.diagnostics) + r.log).c_str());
    QCOMPARE(error->file, std::string("host_error.cu"));
    QCOMPARE(error->line, 5);
    QVERIFY(error->column > 0);
    QVERIFY2(error->message.find("do not call") != std::string::npos, error->message.c_str());
  }

  void nvccTimeLimit() {
    if (!nvcc_) QSKIP(qPrintable("nvcc is not available: " + nvccProblem_));
    Compiler compiler(CompilerOptions{.cacheDirectory = cacheRoot_ / "nvcc-limit", .timeLimit = std::chrono::milliseconds(1)});
    CompileRequest request;
    request.form = SourceForm::HostLauncher;
    request.source = kHostLauncher;
    const auto start = std::chrono::steady_clock::now();
    const auto r = compiler.compile(request);
    QVERIFY(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    QVERIFY(!r.ok);
    const auto *error = first(r, Diagnostic::Severity::Error);
    QVERIFY2(error && error->message == "nvcc timed out after 0.001 s", describe(r.diagnostics).c_str());
    QVERIFY(!fs::exists(compiler.cache().metadataPath(r.cacheKey)));  // never cached
  }

  void missingNvccIsAClearError() {
    Compiler compiler(CompilerOptions{.useCache = false, .nvcc = "/nonexistent/bin/nvcc"});
    CompileRequest request;
    request.form = SourceForm::HostLauncher;
    request.source = kHostLauncher;
    const auto r = compiler.compile(request);
    QVERIFY(!r.ok);
    QVERIFY2(!r.diagnostics.empty() && r.diagnostics[0].message.find("/nonexistent/bin/nvcc") != std::string::npos,
             describe(r.diagnostics).c_str());
  }

  void elfReaderSurvivesDamage() {
    QVERIFY(!readElf(""));
    QVERIFY(!readElf("not an elf file at all"));
    std::string error;
    QVERIFY(!readElf(std::string("\x7f" "ELF\x01\x01\x01", 7), &error));
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    auto request = deviceRequest(kScaleKernel, {"scale"});
    request.defines = {{"SCALE", "2.0f"}};
    const auto r = uncached().compile(request);
    QVERIFY(r.ok);
    // Every cut and a spread of flipped bytes: no crash, and either a clean refusal or a result.
    for (std::size_t cut = 0; cut < r.image.size(); cut += 97) (void)readElf(std::string_view(r.image).substr(0, cut));
    for (std::size_t at = 0; at < std::min<std::size_t>(r.image.size(), 4096); at += 3) {
      std::string damaged = r.image;
      damaged[at] = static_cast<char>(damaged[at] ^ 0xff);
      (void)readElf(damaged);
    }
  }

  void ptxAndSass() {
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + nvrtcProblem_));
    auto request = deviceRequest(kScaleKernel, {"scale"});
    request.defines = {{"SCALE", "2.0f"}};
    const auto ptx = ptxText(request);
    QVERIFY2(ptx.ok, ptx.error.c_str());
    QVERIFY(ptx.text.find(".target sm_90") != std::string::npos);
    QVERIFY(ptx.text.find(".entry scale") != std::string::npos);
    auto broken = request;
    broken.source += "oops";
    const auto bad = ptxText(broken);
    QVERIFY(!bad.ok);
    QVERIFY(!bad.diagnostics.empty());

    // Without the tools, a clear refusal.
    const auto none = sassText("whatever", DisassemblyTools{});
    QVERIFY(!none.ok);
    QVERIFY2(none.error.find("cuobjdump") != std::string::npos, none.error.c_str());

    const auto tools = findDisassemblyTools();
    if (!tools.any()) QSKIP("neither cuobjdump nor nvdisasm is installed here: SASS text is not available");
    const auto r = uncached().compile(request);
    QVERIFY(r.ok);
    const auto sass = sassText(r.image, tools);
    QVERIFY2(sass.ok, sass.error.c_str());
    QVERIFY2(sass.text.find("scale") != std::string::npos, sass.text.c_str());
    if (!tools.nvdisasm.empty()) {
      const auto viaNvdisasm = sassText(r.image, DisassemblyTools{.nvdisasm = tools.nvdisasm});
      QVERIFY2(viaNvdisasm.ok, viaNvdisasm.error.c_str());
    }
  }

  // nvcc runs the host compiler on untrusted code: inside the sandbox an #include of a file in
  // $HOME or /tmp finds nothing ("No such file"), while the same source compiles without a
  // sandbox, so the check is a real attempt. Each mechanism that works here.
  void nvccSandboxHidesHostFiles_data() {
    QTest::addColumn<SandboxPreference>("preference");
    QTest::newRow("bwrap") << SandboxPreference::Bwrap;
    QTest::newRow("unshare") << SandboxPreference::Unshare;
    QTest::newRow("none") << SandboxPreference::None;
  }

  void nvccSandboxHidesHostFiles() {
    QFETCH(SandboxPreference, preference);
    if (!nvcc_) QSKIP(qPrintable("nvcc is not available: " + nvccProblem_));
    const auto support = probeSandboxSupport(preference);
    if (preference != SandboxPreference::None && support.kind == SandboxKind::None)
      QSKIP(qPrintable("not available here: " + QString::fromStdString(support.reason)));
    // A pretend $HOME outside /tmp (in the test's output folder, which no cover hides), with a
    // "private key" in it, and a file in /tmp outside nvcc's work directory.
    const fs::path home = cacheRoot_ / ("home-" + std::string(QTest::currentDataTag()));
    fs::create_directories(home / ".ssh");
    const std::string secretText = "KWB_SECRET_TOKEN_5f3a9c";
    std::ofstream(home / ".ssh" / "id_rsa.h") << "#define KWB_STOLEN \"" << secretText << "\"\n";
    QTemporaryDir tmp(QDir::tempPath() + "/kwb-outside-XXXXXX");
    QVERIFY(tmp.isValid());
    const fs::path tmpSecret = fs::path(tmp.path().toStdString()) / "secret.h";
    std::ofstream(tmpSecret) << "#define KWB_TMP_SECRET 1\n";
    ScopedEnv homeEnv("HOME", home.string());

    NvccCompiler nvcc;
    nvcc.setSandbox(preference);
    for (const fs::path &secret : {home / ".ssh" / "id_rsa.h", tmpSecret}) {
      CompileRequest request;
      request.form = SourceForm::HostLauncher;
      request.source = "#include \"" + secret.string() + "\"\n" + kHostLauncher;
      const auto r = nvcc.compile(request, std::chrono::seconds(120)).result;
      if (preference == SandboxPreference::None) {
        QVERIFY2(r.ok, (describe(r.diagnostics) + r.log).c_str());
        QVERIFY(!r.sandboxed);
        QCOMPARE(r.sandbox, std::string("none"));
        QVERIFY2(!r.sandboxReason.empty(), "a compile without a sandbox says why");
        continue;
      }
      QVERIFY2(r.sandboxed, r.sandboxReason.c_str());
      QCOMPARE(r.sandbox, std::string(sandboxKindName(support.kind)));
      QVERIFY2(!r.ok, r.log.c_str());
      QVERIFY2(r.log.find("No such file") != std::string::npos, r.log.c_str());
      QVERIFY2(r.log.find(secretText) == std::string::npos, r.log.c_str());
      const auto *error = first(r, Diagnostic::Severity::Error);
      QVERIFY(error);
      qInfo("%s: #include \"%s\": %s", sandboxKindName(support.kind), secret.c_str(), error->message.c_str());
    }
  }

  // Ordinary host-launcher compiles work in every sandbox; what the sandbox costs per compile
  // is printed (no timed assertion: the machine is shared).
  void nvccSandboxedCompileAndItsCost() {
    if (!nvcc_) QSKIP(qPrintable("nvcc is not available: " + nvccProblem_));
    CompileRequest request;
    request.form = SourceForm::HostLauncher;
    request.source = kHostLauncher;
    std::string table;
    double plain = -1;
    int sandboxesTried = 0;
    for (const auto preference : {SandboxPreference::None, SandboxPreference::Bwrap, SandboxPreference::Unshare}) {
      const auto support = probeSandboxSupport(preference);
      if (preference != SandboxPreference::None && support.kind == SandboxKind::None) {
        qInfo("nvcc sandbox cost: %s not available here: %s", preference == SandboxPreference::Bwrap ? "bwrap" : "unshare",
              support.reason.c_str());
        continue;
      }
      NvccCompiler nvcc;
      nvcc.setSandbox(preference);
      std::vector<double> seconds;
      for (int i = 0; i < 2; ++i) {
        const auto start = std::chrono::steady_clock::now();
        const auto r = nvcc.compile(request, std::chrono::seconds(120)).result;
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        QVERIFY2(r.ok, (describe(r.diagnostics) + r.log).c_str());
        QCOMPARE(r.sandboxed, preference != SandboxPreference::None);
        QCOMPARE(r.sandbox, std::string(sandboxKindName(support.kind)));
        const auto elf = readElf(r.image);
        QVERIFY(elf && exportsFunction(*elf, "kwb_launch"));
        QVERIFY2(kernel(r, "twice"), r.log.c_str());
      }
      const double best = *std::min_element(seconds.begin(), seconds.end());
      if (preference == SandboxPreference::None) plain = best;
      else ++sandboxesTried;
      char line[160];
      std::snprintf(line, sizeof line, "%s: best of 2 %.0f ms%s", sandboxKindName(support.kind), best * 1e3,
                    plain >= 0 && preference != SandboxPreference::None
                        ? (" (" + std::string(best >= plain ? "+" : "") + std::to_string(int((best - plain) * 1e3)) +
                           " ms against none)").c_str()
                        : "");
      table += std::string(table.empty() ? "" : "; ") + line;
    }
    qInfo("nvcc sandbox cost per host-launcher compile: %s", table.c_str());
    if (sandboxesTried == 0) QSKIP("no sandbox works here: only the unsandboxed compile was checked");
  }
};

QTEST_GUILESS_MAIN(TestCompile)
#include "tst_compile.moc"
