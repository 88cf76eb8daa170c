// Untrusted device code is compiled in the sandboxed compile service (issue 17, items 1 and 4):
// the include spellings that got past the textual filter (%:include, a form feed or vertical tab
// around '#', a spliced '#inc\<newline>lude') read nothing outside the toolkit's headers; a
// source that needs too much memory or CPU time is stopped with the limit named, and the next
// compile works; a too large output is refused; without a sandbox the limits still hold and the
// result says where it ran; compiles on several threads share the service's processes.
// Real NVRTC in real kwb-worker --compile-service processes; no GPU. Skips without NVRTC.
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/compile/compile_service.h"
#include "core/compile/compiler.h"
#include "core/compile/diagnostics.h"
#include "core/compile/nvcc_compiler.h"
#include "core/compile/nvrtc_compiler.h"
#include "core/paths/install_paths.h"

using namespace kwb;
namespace fs = std::filesystem;

namespace {

// What a test leaks if it fails: the secret must appear nowhere in a result.
constexpr const char *kSecret = "kwb_secret_7f3a9c";

std::string everything(const CompileResult &r) {
  std::string out = r.log;
  for (const auto &d : r.diagnostics) out += "\n" + formatDiagnostic(d);
  return out;
}

std::string errors(const CompileResult &r) {
  std::string out;
  for (const auto &d : r.diagnostics)
    if (d.severity == Diagnostic::Severity::Error) out += formatDiagnostic(d) + "\n";
  return out;
}

CompileRequest deviceRequest(const std::string &source, const std::string &kernel = "k") {
  CompileRequest r;
  r.source = source;
  r.sourceName = "candidate.cu";
  r.arch = "sm_90";
  r.expectedKernels = {kernel};
  return r;
}

const std::string kGood = "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] += 1.0f; }\n";

// Needs about 1 GiB to compile (NVRTC holds the initializer): over a 512 MiB memory limit.
const std::string kHuge =
    "__device__ char kwb_big[1u << 30] = {1};\n"
    "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = kwb_big[threadIdx.x]; }\n";

// Seconds of constant evaluation per instantiation, 150 instantiations.
const std::string kSlow =
    "__host__ __device__ constexpr unsigned long long burn(unsigned long long n, unsigned long long s) {\n"
    "  for (unsigned long long i = 0; i < n; ++i) s += i ^ (s >> 3);\n"
    "  return s;\n"
    "}\n"
    "template <int N> struct B { static constexpr unsigned long long v = burn(900000, B<N - 1>::v); };\n"
    "template <> struct B<0> { static constexpr unsigned long long v = 1; };\n"
    "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = (float)B<150>::v; }\n";

}  // namespace

class TestCompileService : public QObject {
  Q_OBJECT

 private:
  fs::path secretFile_;  // outside the toolkit, readable by this process
  bool nvrtc_ = false;

  CompileServiceOptions limited(std::uint64_t memoryMb, std::uint64_t cpuSeconds, std::uint64_t outputMb) const {
    CompileServiceOptions o;
    o.limits.memoryBytes = memoryMb << 20;
    o.limits.cpuSeconds = cpuSeconds;
    o.limits.outputBytes = outputMb << 20;
    o.maxProcesses = 2;
    return o;
  }

 private slots:
  void initTestCase() {
    nvrtc_ = NvrtcCompiler::shared().available();
    if (!nvrtc_) QSKIP(qPrintable("NVRTC is not available: " + QString::fromStdString(NvrtcCompiler::shared().problem())));
    QVERIFY2(workerExecutable(), "kwb-worker is not built");
    // Beside the test program (the build tree, not a folder the sandbox covers): only the fence
    // keeps it from being read.
    secretFile_ = fs::path(QCoreApplication::applicationDirPath().toStdString()) / "compile-service-secret.h";
    std::ofstream(secretFile_) << kSecret << "\n";
    QVERIFY(fs::exists(secretFile_));
    // An API key in this process's environment must not reach a compile.
    ::setenv("OPENAI_API_KEY", kSecret, 1);
  }

  void cleanupTestCase() {
    std::error_code ec;
    if (!secretFile_.empty()) fs::remove(secretFile_, ec);
  }

  void includeSpellingsReadNothing_data() {
    QTest::addColumn<QString>("directive");
    // Each got past the textual filter before and printed the file in "identifier ... is undefined".
    QTest::newRow("digraph") << "%:include \"%1\"";
    QTest::newRow("form feed before #") << "\f#include \"%1\"";
    QTest::newRow("vertical tab after #") << "#\vinclude \"%1\"";
    QTest::newRow("spliced") << "#inc\\\nlude \"%1\"";
    QTest::newRow("digraph, environment") << "%:include \"/proc/self/environ\"";
    QTest::newRow("digraph, shadow") << "%:include \"/etc/shadow\"";
  }
  void includeSpellingsReadNothing() {
    QFETCH(QString, directive);
    std::string line = directive.toStdString();
    if (const auto at = line.find("%1"); at != std::string::npos) line.replace(at, 2, secretFile_.string());
    const auto request = deviceRequest(line + "\n" + kGood);
    const auto r = CompileService::shared().compile(request, std::chrono::seconds(60));
    QVERIFY2(!r.result.ok, everything(r.result).c_str());
    QVERIFY2(everything(r.result).find(kSecret) == std::string::npos, everything(r.result).c_str());
    QVERIFY2(errors(r.result).find("cannot open source file") != std::string::npos, errors(r.result).c_str());
    // Where the service found a sandbox, the result says so; the fence holds either way.
    QVERIFY2(!r.result.sandbox.empty(), "the result does not say where it was compiled");
    QVERIFY2(CompileService::shared().state().fence.rfind("Landlock", 0) == 0,
             CompileService::shared().state().fence.c_str());
  }

  // The Compiler front door goes through the service too (the path every caller takes).
  void compilerUsesTheService() {
    CompilerOptions options;
    options.useCache = false;
    const Compiler compiler(options);
    auto request = deviceRequest("%:include \"" + secretFile_.string() + "\"\n" + kGood);
    const auto bad = compiler.compile(request);
    QVERIFY2(everything(bad).find(kSecret) == std::string::npos, everything(bad).c_str());
    const auto good = compiler.compile(deviceRequest(kGood));
    QVERIFY2(good.ok, everything(good).c_str());
    QVERIFY(!good.image.empty());
    QCOMPARE(good.kernels.size(), std::size_t{1});
    QCOMPARE(good.sandbox, CompileService::shared().state().sandbox);
  }

  void memoryLimitIsNamedAndTheNextCompileWorks() {
    CompileService service(limited(512, 60, 256));
    const auto r = service.compile(deviceRequest(kHuge), std::chrono::seconds(120));
    QVERIFY2(!r.result.ok, everything(r.result).c_str());
    QVERIFY2(errors(r.result).find("512 MiB") != std::string::npos, errors(r.result).c_str());
    const auto next = service.compile(deviceRequest(kGood), std::chrono::seconds(60));
    QVERIFY2(next.result.ok, everything(next.result).c_str());
  }

  void cpuLimitIsNamedAndTheNextCompileWorks() {
    CompileService service(limited(4096, 2, 256));
    const auto r = service.compile(deviceRequest(kSlow), std::chrono::seconds(120));
    QVERIFY2(!r.result.ok, everything(r.result).c_str());
    QVERIFY2(errors(r.result).find("more than 2 s of CPU time") != std::string::npos, errors(r.result).c_str());
    const auto next = service.compile(deviceRequest(kGood), std::chrono::seconds(60));
    QVERIFY2(next.result.ok, everything(next.result).c_str());
  }

  void largeOutputIsRefused() {
    CompileService service(limited(4096, 60, 1));
    // A 2 MiB initialised array makes a CUBIN over the 1 MiB limit.
    const std::string source =
        "__device__ char kwb_table[2u << 20] = {1, 2, 3};\n"
        "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = kwb_table[threadIdx.x]; }\n";
    const auto r = service.compile(deviceRequest(source), std::chrono::seconds(60));
    QVERIFY2(!r.result.ok, everything(r.result).c_str());
    QVERIFY2(errors(r.result).find("over the limit of 1 MiB") != std::string::npos, errors(r.result).c_str());
    QVERIFY(r.result.image.empty());
  }

  // KWB_SANDBOX=none, or a machine without bwrap and user namespaces: a plain child process that
  // says so, with the limits and the fence still on.
  void withoutSandboxTheLimitsStay() {
    auto options = limited(512, 60, 256);
    options.sandbox = SandboxPreference::None;
    CompileService service(options);
    const auto good = service.compile(deviceRequest(kGood), std::chrono::seconds(60));
    QVERIFY2(good.result.ok, everything(good.result).c_str());
    QCOMPARE(good.result.sandbox, std::string("none"));
    QVERIFY(!good.result.sandboxed);
    QVERIFY2(!good.result.sandboxReason.empty(), "no reason given for compiling without a sandbox");
    const auto huge = service.compile(deviceRequest(kHuge), std::chrono::seconds(120));
    QVERIFY2(errors(huge.result).find("512 MiB") != std::string::npos, errors(huge.result).c_str());
    const auto leak = service.compile(deviceRequest("%:include \"" + secretFile_.string() + "\"\n" + kGood),
                                      std::chrono::seconds(60));
    QVERIFY2(everything(leak.result).find(kSecret) == std::string::npos, everything(leak.result).c_str());
  }

  void severalThreadsShareTheProcesses() {
    CompileService service(limited(4096, 60, 256));
    constexpr int kThreads = 4;
    std::vector<CompileOutcome> results(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([&, i] {
        auto request = deviceRequest(kGood);
        request.defines.emplace_back("KWB_VARIANT", std::to_string(i));
        results[i] = service.compile(request, std::chrono::seconds(60));
      });
    for (auto &t : threads) t.join();
    for (const auto &r : results) QVERIFY2(r.result.ok, everything(r.result).c_str());
    QVERIFY(service.runningProcesses() >= 1);
    QVERIFY(service.runningProcesses() <= service.options().maxProcesses);
    // Each reply carried what the compile cost inside the service, and they were summed.
    const auto work = service.work();
    QCOMPARE(work.compiles, std::uint64_t{kThreads});
    QVERIFY2(work.cpuSeconds > 0 && work.wallSeconds > 0,
             ("cpu " + std::to_string(work.cpuSeconds) + " s, wall " + std::to_string(work.wallSeconds) + " s").c_str());
    QVERIFY(work.minorFaults + work.voluntarySwitches + work.involuntarySwitches < (1u << 30));
  }

  // Issue 17, 6: a 0xFF byte before the kernel gave "the source defines no kernel" (NVRTC reads it
  // as the end of the file); a NUL cut the source short silently.
  void unreadableBytesAreNamed() {
    const auto ff = CompileService::shared().compile(deviceRequest("\xff" + kGood), std::chrono::seconds(60));
    QVERIFY(!ff.result.ok);
    QVERIFY2(errors(ff.result).find("candidate.cu:1:1: error: a 0xFF byte") == 0, errors(ff.result).c_str());
    QVERIFY2(errors(ff.result).find("defines no kernel") == std::string::npos, errors(ff.result).c_str());
    std::string withNul = "// first line\n// x" + std::string(1, '\0') + "y\n" + kGood;
    const auto nul = CompileService::shared().compile(deviceRequest(withNul), std::chrono::seconds(60));
    QVERIFY(!nul.result.ok);
    QVERIFY2(errors(nul.result).find("candidate.cu:2:5: error: a NUL byte") == 0, errors(nul.result).c_str());
  }

  // The PTX view (kwb asm --ptx, the GUI's listing) compiles in the service as well.
  void ptxComesFromTheService() {
    const auto text = CompileService::shared().ptx(deviceRequest(kGood), std::chrono::seconds(60));
    QVERIFY2(text.ok, text.error.c_str());
    QVERIFY(text.text.find(".visible .entry k(") != std::string::npos);
    const auto leak =
        CompileService::shared().ptx(deviceRequest("%:include \"" + secretFile_.string() + "\"\n" + kGood), std::chrono::seconds(60));
    QVERIFY(!leak.ok);
    QVERIFY2(leak.log.find(kSecret) == std::string::npos && leak.error.find(kSecret) == std::string::npos, leak.log.c_str());
  }

  // nvcc (host launchers) runs under the same limits, through prlimit.
  void nvccRunsUnderTheLimits() {
    NvccCompiler nvcc;
    if (!nvcc.available()) QSKIP(qPrintable("nvcc is not available: " + QString::fromStdString(nvcc.problem())));
    CompileLimits limits;
    limits.memoryBytes = 512ull << 20;
    nvcc.setLimits(limits);
    CompileRequest request;
    request.form = SourceForm::HostLauncher;
    request.sourceName = "launcher.cu";
    request.arch = "sm_90";
    request.source =
        "#include <cuda_runtime.h>\n"
        "__device__ char kwb_big[1u << 30] = {1};\n"
        "__global__ void k(float *x) { x[threadIdx.x] = kwb_big[threadIdx.x]; }\n"
        "extern \"C\" cudaError_t kwb_launch(void *const *args, cudaStream_t s) {\n"
        "  k<<<1, 32, 0, s>>>(*(float **)args[0]);\n"
        "  return cudaGetLastError();\n"
        "}\n";
    const auto r = nvcc.compile(request, std::chrono::seconds(240));
    QVERIFY2(!r.result.ok, everything(r.result).c_str());
    QVERIFY2(errors(r.result).find("512 MiB of memory") != std::string::npos, errors(r.result).c_str());
  }
};

QTEST_GUILESS_MAIN(TestCompileService)
#include "tst_compile_service.moc"
