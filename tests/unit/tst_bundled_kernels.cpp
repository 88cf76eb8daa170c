// Every bundled task's reference and starter compile with NVRTC (the path device-only
// candidates take) for sm_90, for every combination of the task's tunables, and the compiled
// code holds the kernel the manifest names. Needs the CUDA toolkit's NVRTC, not a GPU.
#include <QtTest>

#include <fstream>
#include <sstream>

#include "core/gpu/cuda_libraries.h"
#include "core/task/task_catalog.h"

namespace {

using nvrtcProgram = struct _nvrtcProgram *;

struct Nvrtc {
  kwb::DynamicLibrary lib;
  int (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *) = nullptr;
  int (*compile)(nvrtcProgram, int, const char *const *) = nullptr;
  int (*logSize)(nvrtcProgram, std::size_t *) = nullptr;
  int (*log)(nvrtcProgram, char *) = nullptr;
  int (*cubinSize)(nvrtcProgram, std::size_t *) = nullptr;
  int (*cubin)(nvrtcProgram, char *) = nullptr;
  int (*destroy)(nvrtcProgram *) = nullptr;

  bool load() {
    return kwb::openNvrtc(lib) &&
           lib.resolve(create, "nvrtcCreateProgram") && lib.resolve(compile, "nvrtcCompileProgram") &&
           lib.resolve(logSize, "nvrtcGetProgramLogSize") && lib.resolve(log, "nvrtcGetProgramLog") &&
           lib.resolve(cubinSize, "nvrtcGetCUBINSize") && lib.resolve(cubin, "nvrtcGetCUBIN") &&
           lib.resolve(destroy, "nvrtcDestroyProgram");
  }

  // Returns the compile log on failure, or an empty string when the CUBIN holds `kernel`.
  std::string build(const std::string &source, const std::string &name, const std::string &kernel,
                    const std::vector<std::string> &defines) {
    nvrtcProgram prog = nullptr;
    if (create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr) != 0) return "nvrtcCreateProgram failed";
    std::vector<std::string> options{"--gpu-architecture=sm_90", "-std=c++17"};
    for (const auto &d : defines) options.push_back("-D" + d);
    std::vector<const char *> argv;
    for (const auto &o : options) argv.push_back(o.c_str());
    const int rc = compile(prog, static_cast<int>(argv.size()), argv.data());
    std::string result;
    if (rc != 0) {
      std::size_t n = 0;
      logSize(prog, &n);
      result.resize(n);
      log(prog, result.data());
      result = "compile failed:\n" + result;
    } else {
      std::size_t n = 0;
      cubinSize(prog, &n);
      std::string bytes(n, '\0');
      cubin(prog, bytes.data());
      if (bytes.find(kernel) == std::string::npos) result = "the CUBIN has no kernel named " + kernel;
    }
    destroy(&prog);
    return result;
  }
};

std::string readFile(const std::filesystem::path &p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every combination of the tunables' values as -D definitions (one empty set when none).
std::vector<std::vector<std::string>> tunableCombinations(const std::vector<kwb::Tunable> &tunables) {
  std::vector<std::vector<std::string>> out{{}};
  for (const auto &t : tunables) {
    std::vector<std::vector<std::string>> next;
    for (const auto &partial : out)
      for (auto v : t.values) {
        auto d = partial;
        d.push_back(t.name + "=" + std::to_string(v));
        next.push_back(d);
      }
    out = next;
  }
  return out;
}

}  // namespace

class TestBundledKernels : public QObject {
  Q_OBJECT
 private slots:
  void compileEverySource_data() {
    QTest::addColumn<QString>("folder");
    const auto entries = kwb::listTasks(KWB_SOURCE_DIR "/kernels");
    QVERIFY(entries.size() >= 2);
    for (const auto &e : entries) QTest::newRow(e.folder.filename().c_str()) << QString::fromStdString(e.folder.string());
  }

  void compileEverySource() {
    QFETCH(QString, folder);
    Nvrtc nvrtc;
    if (!nvrtc.load()) QSKIP(qPrintable("NVRTC is not available: " + QString::fromStdString(nvrtc.lib.error())));
    const auto entries = kwb::listTasks(folder.toStdString());
    QCOMPARE(entries.size(), std::size_t(1));
    QVERIFY2(entries[0].task, entries[0].error.c_str());
    const kwb::Task &task = *entries[0].task;

    const auto ref = task.folder / task.reference.source;
    auto problem = nvrtc.build(readFile(ref), ref.string(), task.reference.launch.kernel, {});
    QVERIFY2(problem.empty(), (ref.string() + ": " + problem).c_str());

    const auto starter = task.folder / task.starterSource();
    const std::string kernel = task.launch ? task.launch->kernel : task.reference.launch.kernel;
    int built = 0;
    for (const auto &defines : tunableCombinations(task.tunables)) {
      problem = nvrtc.build(readFile(starter), starter.string(), kernel, defines);
      std::string label;
      for (const auto &d : defines) label += " -D" + d;
      QVERIFY2(problem.empty(), (starter.string() + label + ": " + problem).c_str());
      ++built;
    }
    qInfo("%s: reference and %d starter variants compile", task.name.c_str(), built);
  }
};

QTEST_GUILESS_MAIN(TestBundledKernels)
#include "tst_bundled_kernels.moc"
