// Exported CUDA packages (issue 20 item 1): expressions and names as C++; the test helpers' inputs
// byte for byte the workbench's (compiled by nvcc here, compared with core/eval/input_generator);
// packages of bundled tasks (device code with a tunable, bf16 and u8/i32 tensors, a host launcher)
// configured and built by CMake as exported; their test program run (on a GPU it must pass; here
// it must stop with the CUDA error); the tunables a run used read back from its launches; kwb
// export as a user runs it, with its refusals; PyTorch extensions' files; a report with every
// section, self-contained HTML with charts that parse as SVG.
#include <QtTest>

#include <QProcess>
#include <QSvgRenderer>
#include <QTemporaryDir>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/eval/input_generator.h"
#include "core/export/export_sources.h"
#include "core/export/kernel_export.h"
#include "core/export/package_parts.h"
#include "core/export/report.h"
#include "core/text/base64.h"
#include "core/gpu/device_info.h"
#include "core/store/workspace.h"
#include "core/task/manifest_parser.h"
#include "helpers/memory_fixtures.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;
using namespace kwb;
using namespace kwb::exporting;

namespace {

struct Run {
  int exitCode = -1;
  std::string out, err;
};

Run run(const QString &program, const QStringList &args, const QString &dir = {}, int timeoutMs = 300000) {
  QProcess p;
  if (!dir.isEmpty()) p.setWorkingDirectory(dir);
  p.start(program, args);
  Run r;
  if (!p.waitForStarted(30000)) {
    r.err = "could not start " + program.toStdString();
    return r;
  }
  p.waitForFinished(timeoutMs);
  r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput().toStdString();
  r.err = p.readAllStandardError().toStdString();
  return r;
}

QString nvcc() { return QStringLiteral(KWB_CUDA_HOME_FOR_TESTS "/bin/nvcc"); }

ExportInput inputOf(const std::string &taskName, const fs::path &candidate = {}) {
  ExportInput in;
  in.task = loadTask(test::kernelsDir() / taskName);
  in.code = test::readFile(candidate.empty() ? in.task.folder / in.task.starterSource() : candidate);
  in.provenance.what = "file " + (candidate.empty() ? in.task.starterSource().string() : candidate.filename().string());
  return in;
}

}  // namespace

class TestKernelExport : public QObject {
  Q_OBJECT

  bool gpu_ = false;

 private slots:
  void initTestCase() { gpu_ = probeGpus().hasDevices(); }

  void identifiersAndExpressions() {
    QCOMPARE(identifierOf("gemm-bf16"), std::string("gemm_bf16"));
    QCOMPARE(identifierOf("2d-blur"), std::string("k_2d_blur"));
    QCOMPARE(cppExpression(Expression::parse("ceil_div(n, BLOCK)"), {{"BLOCK", 256}}), std::string("(kwb_ceil_div(n, (256LL)))"));
    QCOMPARE(cppExpression(Expression::parse("min(ceil_div(n, BLOCK), 1056)"), {{"BLOCK", 128}}),
             std::string("(kwb_min(kwb_ceil_div(n, (128LL)), 1056LL))"));
    QCOMPARE(cppExpression(Expression::parse("2 * maxval - -3 % M"), {}), std::string("(2LL * maxval - -3LL % M)"));
    QCOMPARE(cppExpression(Expression(), {}), std::string("0LL"));
    QCOMPARE(cppType(DType::BF16), std::string("__nv_bfloat16"));
    QCOMPARE(cppType(DType::U8), std::string("std::uint8_t"));
    QVERIFY(exportFormatFromString("torch") == ExportFormat::Torch);
    QVERIFY(!exportFormatFromString("zip"));
    QCOMPARE(parseSourceSpec("run:12").id, std::int64_t{12});
    QVERIFY(parseSourceSpec("42").kind == SourceSpec::Kind::Run);
    QVERIFY(parseSourceSpec("session:20261204-101010-abcd").kind == SourceSpec::Kind::Session);
    QVERIFY(parseSourceSpec("case:7").kind == SourceSpec::Kind::Case);
    QVERIFY(parseSourceSpec("kernels/x.cu").kind == SourceSpec::Kind::File);
    QVERIFY_THROWS_EXCEPTION(ExportError, parseSourceSpec("run:x"));
  }

  // The package's test makes the workbench's inputs: the same bytes, dtype by dtype and generator
  // by generator, from the helpers compiled by nvcc.
  void generatorMatchesTheWorkbench() {
    QTemporaryDir dir;
    {
      std::ofstream(fs::path(dir.path().toStdString()) / "kwb_check.cuh") << checkHeaderText();
    }
    struct Case {
      DType dtype;
      const char *checkDtype;
      Generator g;
      const char *checkKind;
      std::uint64_t seed;
      const char *name;
      std::vector<std::int64_t> shape = {};  // for a matrix structure: 4099 elements otherwise
    };
    // Issue 46: scale and shift on every kind, and the matrix structures.
    const auto with = [](Generator g, double scale, double shift, Generator::Matrix matrix = Generator::Matrix::None,
                         std::int64_t diagonal = 0) {
      g.scale = scale;
      g.shift = shift;
      g.matrix = matrix;
      g.diagonal = diagonal;
      return g;
    };
    using M = Generator::Matrix;
    const std::vector<Case> cases = {
        {DType::F32, "F32", {Generator::Kind::Normal, 0.0, 4.0, 0}, "Normal", 1, "x"},
        {DType::F32, "F32", {Generator::Kind::Uniform, -100.0, 100.0, 0}, "Uniform", 2, "x"},
        {DType::F64, "F64", {Generator::Kind::Uniform, 0.0, 1.0, 3}, "Uniform", 5, "gamma"},
        {DType::F16, "F16", {Generator::Kind::Uniform, -1.0, 1.0, 0}, "Uniform", 1, "A"},
        {DType::BF16, "BF16", {Generator::Kind::Normal, 3.0, 2.0, 1}, "Normal", 3, "B"},
        {DType::I32, "I32", {Generator::Kind::RandInt, -50.0, 50.0, 0}, "RandInt", 1, "idx"},
        {DType::U8, "U8", {Generator::Kind::RandInt, 0.0, 256.0, 0}, "RandInt", 1, "data"},
        {DType::I8, "I8", {Generator::Kind::Uniform, -300.0, 300.0, 0}, "Uniform", 4, "q"},
        {DType::I64, "I64", {Generator::Kind::Arange, 5.0, 3.0, 0}, "Arange", 1, "pos"},
        {DType::Bool, "Bool", {Generator::Kind::RandInt, 0.0, 2.0, 2}, "RandInt", 9, "mask"},
        {DType::F32, "F32", {Generator::Kind::Arange, 0.5, 0.25, 0}, "Arange", 1, "ramp"},
        {DType::I32, "I32", {Generator::Kind::Constant, 7.0, 0.0, 0}, "Constant", 1, "bins"},
        // Beyond 2^53, saturation, integers into floats.
        {DType::I64, "I64", {Generator::Kind::RandInt, -1e18, 1e18, 0}, "RandInt", 3, "big"},
        {DType::F16, "F16", {Generator::Kind::RandInt, -1000.0, 1000.0, 0}, "RandInt", 1, "h"},
        {DType::I32, "I32", {Generator::Kind::Arange, -5.0, 1e6, 0}, "Arange", 1, "wide"},
        {DType::U8, "U8", {Generator::Kind::Arange, 250.0, 1.0, 0}, "Arange", 1, "wrap"},
        {DType::BF16, "BF16", {Generator::Kind::Uniform, 0.0, 1.0, 0}, "Uniform", 2, "near_high"},
        {DType::F32, "F32", with({Generator::Kind::RandInt, 0.0, 2.0, 0}, 2, -1), "RandInt", 1, "sign"},
        {DType::F16, "F16", with({Generator::Kind::Uniform, 0.0, 1.0, 0}, 2048, 0), "Uniform", 1, "wide"},
        {DType::BF16, "BF16", with({Generator::Kind::Normal, 0.0, 1.0, 2}, 0.02, 0.5), "Normal", 3, "w"},
        {DType::I32, "I32", with({Generator::Kind::RandInt, 0.0, 10.0, 0}, 3, -4), "RandInt", 2, "k"},
        {DType::U8, "U8", with({Generator::Kind::Arange, 0.0, 1.0, 0}, -1, 300), "Arange", 1, "down"},
        {DType::I64, "I64", with({Generator::Kind::Constant, 7.0, 0.0, 0}, -2, 1), "Constant", 1, "c"},
        {DType::Bool, "Bool", with({Generator::Kind::RandInt, 0.0, 2.0, 0}, 1, -1), "RandInt", 1, "flip"},
        {DType::F64, "F64", with({Generator::Kind::Arange, 0.5, 0.25, 0}, 0.1, 0.3), "Arange", 1, "ramp"},
        {DType::F32, "F32", with({Generator::Kind::Normal, 0.0, 1.0, 0}, 1, 0, M::Symmetric), "Normal", 1, "A",
         {3, 33, 33}},
        {DType::F16, "F16", with({Generator::Kind::Uniform, -1.0, 1.0, 0}, 0.5, 0, M::Symmetric), "Uniform", 2, "S",
         {64, 64}},
        {DType::I32, "I32", with({Generator::Kind::RandInt, -9.0, 9.0, 0}, 1, 0, M::Symmetric), "RandInt", 1, "Si",
         {2, 17, 17}},
        {DType::F32, "F32", with({Generator::Kind::Uniform, 1.0, 2.0, 0}, 1, 0, M::Upper, 1), "Uniform", 1, "U",
         {2, 30, 41}},
        {DType::BF16, "BF16", with({Generator::Kind::Normal, 0.0, 1.0, 0}, 1, 0, M::Upper, -2), "Normal", 1, "U2",
         {41, 30}},
        {DType::I64, "I64", with({Generator::Kind::Arange, 1.0, 1.0, 0}, 1, 0, M::Lower, 0), "Arange", 1, "L",
         {3, 20, 20}},
        {DType::F64, "F64", with({Generator::Kind::Normal, 0.0, 1.0, 0}, 2, 1, M::Lower, 3), "Normal", 4, "L2",
         {5, 7, 9}},
    };
    const std::size_t count = 4099;
    const auto countOf = [&](const Case &c) {
      std::size_t n = 1;
      for (const auto d : c.shape) n *= std::size_t(d);
      return c.shape.empty() ? count : n;
    };
    std::string program = "#include \"kwb_check.cuh\"\nint main() {\n";
    for (const auto &c : cases) {
      // The package's own literal (kernel_export's generatorLiteral), and the last two dimensions.
      const std::string matrix = c.shape.size() < 2 ? std::string()
                                                    : ", " + std::to_string(c.shape[c.shape.size() - 2]) + ", " +
                                                          std::to_string(c.shape.back());
      program += std::string("  { auto b = kwb_check::generate(kwb_check::DType::") + c.checkDtype + ", " +
                 std::to_string(countOf(c)) + ", kwb_check::Generator" + parts::generatorLiteral(c.g) + ", " +
                 std::to_string(c.seed) + "ULL, \"" + c.name + "\"" + matrix +
                 "); for (unsigned char v : b) std::printf(\"%02x\", v); std::printf(\"\\n\"); }\n";
      QVERIFY(parts::generatorLiteral(c.g).find(c.checkKind) != std::string::npos);
    }
    program += "  return 0;\n}\n";
    {
      std::ofstream(fs::path(dir.path().toStdString()) / "gen.cu") << program;
    }
    const Run built = run(nvcc(), {QStringLiteral("-std=c++17"), QStringLiteral("-o"), QStringLiteral("gen"), QStringLiteral("gen.cu")},
                          dir.path());
    QVERIFY2(built.exitCode == 0, built.err.c_str());
    const Run ran = run(dir.filePath(QStringLiteral("gen")), {}, dir.path());
    QCOMPARE(ran.exitCode, 0);
    std::istringstream lines(ran.out);
    for (const auto &c : cases) {
      std::string hex;
      QVERIFY(std::getline(lines, hex));
      const auto want = c.shape.empty() ? generateInput(c.dtype, count, c.g, c.seed, c.name, 1)
                                        : generateInput(c.dtype, c.shape, c.g, c.seed, c.name, 1);
      std::string wantHex;
      for (const auto b : want) {
        char two[3];
        std::snprintf(two, sizeof two, "%02x", static_cast<unsigned>(b));
        wantHex += two;
      }
      QVERIFY2(hex == wantHex, (std::string(c.checkDtype) + " " + c.checkKind + " " + c.name + " differs from the workbench's").c_str());
    }
  }

  // Packages of bundled tasks, built by CMake as exported: the test program runs (and passes on a
  // GPU; stops with the CUDA error here).
  void packagesBuild_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("candidate");
    QTest::addColumn<QString>("set");
    QTest::newRow("softmax BLOCK=512") << "softmax" << "" << "BLOCK=512";
    QTest::newRow("histogram (u8, i32 exact)") << "histogram" << "" << "";
    QTest::newRow("gemm-bf16 (bf16)") << "gemm-bf16" << "" << "";
    QTest::newRow("softmax host launcher") << "softmax" << QStringLiteral(KWB_SOURCE_DIR "/bench/candidates/softmax_launcher.cu") << "";
    // Issue 46: generators with scale, shift and matrix structures (the test passes the last two
    // dimensions, per configuration, to kwb_check::generate).
    QTest::newRow("softmax structured inputs") << "softmax" << "" << "structured";
  }

  void packagesBuild() {
    QFETCH(QString, task);
    QFETCH(QString, candidate);
    QFETCH(QString, set);
    QTemporaryDir dir;
    const fs::path root = fs::path(dir.path().toStdString()) / "package";
    ExportInput in = inputOf(task.toStdString(), candidate.toStdString());
    if (set == QStringLiteral("structured")) {
      Tensor &x = in.task.tensors.at(0);
      x.init->matrix = Generator::Matrix::Upper;
      x.init->diagonal = -1;
      x.init->scale = 0.5;
      x.moreInits.at(0).shift = 3;
      x.moreInits.at(0).matrix = Generator::Matrix::Lower;
      set.clear();
    }
    if (!set.isEmpty()) in.tunables[set.section(QLatin1Char('='), 0, 0).toStdString()] = set.section(QLatin1Char('='), 1).toLongLong();
    const auto out = exportCudaPackage(in, root);
    const std::string id = identifierOf(task.toStdString());
    for (const std::string f : {"README.md", "CMakeLists.txt", "provenance.json", "test/kwb_check.cuh", "test/reference.cu"})
      QVERIFY2(std::find(out.files.begin(), out.files.end(), f) != out.files.end(), f.c_str());
    const std::string header = test::readFile(root / "include" / (id + ".h"));
    const std::string kernel = test::readFile(root / "src" / (id + "_kernel.cu"));
    QVERIFY2(kernel.find(in.code) != std::string::npos, "the kernel's code, as it was");
    if (set == QStringLiteral("BLOCK=512")) {
      QVERIFY(kernel.find("#define BLOCK 512\n") != std::string::npos);
      QVERIFY(header.find("Tunables baked into the kernel: BLOCK = 512.") != std::string::npos);
      QVERIFY(header.find("cudaError_t softmax(const float *x, float *y, long long rows, long long cols, cudaStream_t stream = nullptr);") !=
              std::string::npos);
    }
    if (in.task.tensors[0].init->matrix != Generator::Matrix::None) {
      const std::string test = test::readFile(root / "test" / ("test_" + id + ".cu"));
      QVERIFY2(test.find("{kwb_check::Kind::Normal, 0.0, 4.0, 0ULL, 0.5, 0.0, kwb_check::Matrix::Upper, -1LL}, "
                         "{kwb_check::Kind::Uniform, -100.0, 100.0, 0ULL, 1.0, 3.0, kwb_check::Matrix::Lower, 0LL}") !=
                   std::string::npos,
               test.c_str());
      QVERIFY2(test.find("seed, \"x\", std::size_t([](long long rows) { using namespace ::kwb_export::expr; return (rows); }(c.rows)), "
                         "std::size_t([](long long cols) { using namespace ::kwb_export::expr; return (cols); }(c.cols)));") !=
                   std::string::npos,
               test.c_str());
    }
    const auto provenance = nlohmann::json::parse(test::readFile(root / "provenance.json"));
    QCOMPARE(provenance["task"].get<std::string>(), task.toStdString());
    QCOMPARE(provenance["candidate_hash"].get<std::string>().size(), std::size_t{32});
    QVERIFY(!provenance["exported_at"].get<std::string>().empty());
    // Refused: a folder with files in it, unless asked.
    QVERIFY_THROWS_EXCEPTION(ExportError, exportCudaPackage(in, root));
    QCOMPARE(exportCudaPackage(in, root, true).files.size(), out.files.size());

    const QString build = QString::fromStdString((root / "build").string());
    const Run configured = run(QStringLiteral("cmake"), {QStringLiteral("-S"), QString::fromStdString(root.string()), QStringLiteral("-B"), build,
                                                          QStringLiteral("-DCMAKE_CUDA_ARCHITECTURES=90"),
                                                          QStringLiteral("-DCMAKE_CUDA_COMPILER=") + nvcc()});
    QVERIFY2(configured.exitCode == 0, (configured.out + configured.err).c_str());
    const Run built = run(QStringLiteral("cmake"), {QStringLiteral("--build"), build, QStringLiteral("-j"), QStringLiteral("2")});
    QVERIFY2(built.exitCode == 0, (built.out + built.err).c_str());
    const Run tested = run(QString::fromStdString((root / "build" / ("test_" + id)).string()), {QStringLiteral("--samples"), QStringLiteral("5")});
    if (gpu_) {
      QVERIFY2(tested.exitCode == 0, (tested.out + tested.err).c_str());
      QVERIFY(tested.out.find("passed:") != std::string::npos);
    } else {
      QVERIFY2(tested.exitCode == 3, (tested.out + tested.err).c_str());
      QVERIFY2(tested.err.find("failed:") != std::string::npos, tested.err.c_str());
    }
  }

  // --force (issue 45 item 4): links planted in the folder are replaced, never written through: a
  // file's link to a file outside, a subfolder's link to a folder outside; every format. The
  // folder itself a link: refused, its target untouched.
  void forceNeverWritesThroughLinks_data() {
    QTest::addColumn<QString>("format");
    QTest::newRow("cuda") << "cuda";
    QTest::newRow("torch") << "torch";
  }

  void forceNeverWritesThroughLinks() {
    QFETCH(QString, format);
    QTemporaryDir dir;
    const fs::path root(dir.path().toStdString());
    const fs::path outside = root / "outside", package = root / "package";
    fs::create_directories(outside / "folder");
    fs::create_directories(package);
    std::ofstream(outside / "victim.txt") << "keep me\n";
    std::ofstream(outside / "folder" / "softmax.h") << "keep me too\n";
    fs::create_symlink(outside / "victim.txt", package / "README.md");
    fs::create_symlink(outside / "folder", package / "include");
    const ExportInput in = inputOf("softmax");
    const auto exportTo = [&](const fs::path &to, bool force) {
      return format == QStringLiteral("cuda") ? exportCudaPackage(in, to, force) : exportTorchPackage(in, to, force);
    };
    QVERIFY_THROWS_EXCEPTION(ExportError, exportTo(package, false));  // not empty
    exportTo(package, true);
    QCOMPARE(test::readFile(outside / "victim.txt"), std::string("keep me\n"));
    QCOMPARE(test::readFile(outside / "folder" / "softmax.h"), std::string("keep me too\n"));
    QCOMPARE(std::distance(fs::directory_iterator(outside / "folder"), fs::directory_iterator()), std::ptrdiff_t{1});
    QCOMPARE(std::distance(fs::directory_iterator(outside), fs::directory_iterator()), std::ptrdiff_t{2});
    QVERIFY(!fs::is_symlink(package / "README.md") && fs::is_regular_file(package / "README.md"));
    QVERIFY(test::readFile(package / "README.md").find("# softmax") == 0);
    QVERIFY(!fs::is_symlink(package / "include") && fs::is_directory(package / "include"));
    QVERIFY(test::readFile(package / "include" / "softmax.h").find("cudaError_t softmax(") != std::string::npos);
    for (const auto &entry : fs::recursive_directory_iterator(package))  // no temporary left behind
      QVERIFY2(entry.path().filename().string().find(".kwb-") == std::string::npos, entry.path().c_str());

    // The folder named is itself a link (to a folder with files): refused, with --force too.
    const fs::path linked = root / "linked";
    fs::create_symlink(outside, linked);
    try {
      exportTo(linked, true);
      QFAIL("an export into a link was written");
    } catch (const ExportError &e) {
      QCOMPARE(std::string(e.what()), linked.string() + " is a symbolic link (to " + outside.string() +
                                          "); an export is not written through links: name the folder it leads to, or a new one");
    }
    QCOMPARE(test::readFile(outside / "victim.txt"), std::string("keep me\n"));
    QVERIFY(!fs::exists(outside / "provenance.json"));
  }

  // A package exported with no measured architecture configures and builds on a machine without
  // a GPU (this one; most CI): CMake refuses a bare `native` there ("no GPU was detected"). Without
  // nvidia-smi it builds for 80-real;90, or the measured architecture; with one (a stand-in here),
  // for the GPUs it reports, the measured one keeping its features (90 -> 90a); a user's
  // -DCMAKE_CUDA_ARCHITECTURES wins.
  void packageConfiguresWithoutAGpu() {
    QTemporaryDir dir;
    const fs::path root(dir.path().toStdString());
    const fs::path bin = root / "bin";  // PATH: cmake's own tools, and no nvidia-smi unless written
    fs::create_directories(bin);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("PATH"), QString::fromStdString(bin.string()) + QStringLiteral(":/usr/bin:/bin"));
    env.remove(QStringLiteral("CUDAARCHS"));
    const auto configure = [&](const fs::path &package, const QStringList &extra = {}) {
      QProcess p;
      p.setProcessEnvironment(env);
      p.setProcessChannelMode(QProcess::MergedChannels);
      p.start(QStringLiteral("cmake"), QStringList{QStringLiteral("-S"), QString::fromStdString(package.string()), QStringLiteral("-B"),
                                                   QString::fromStdString((package / "build").string()),
                                                   QStringLiteral("-DCMAKE_CUDA_COMPILER=") + nvcc()} + extra);
      p.waitForFinished(300000);
      return std::make_pair(p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAll().toStdString());
    };
    const auto cachedArchitectures = [](const fs::path &package) {
      const std::string cache = test::readFile(package / "build" / "CMakeCache.txt");
      const auto at = cache.find("\nCMAKE_CUDA_ARCHITECTURES:");  // :STRING= as chosen, :UNINITIALIZED= as given
      if (at == std::string::npos) return std::string("(not cached)");
      const auto value = cache.find('=', at) + 1;
      return cache.substr(value, cache.find('\n', value) - value);
    };

    // Not measured, no GPU: configured and built (the library: the kernel and its launcher).
    ExportInput in = inputOf("softmax");
    const fs::path unmeasured = root / "unmeasured";
    const auto out = exportCudaPackage(in, unmeasured);
    QVERIFY(test::readFile(unmeasured / "CMakeLists.txt").find("CMAKE_CUDA_ARCHITECTURES native") == std::string::npos);
    QVERIFY(std::any_of(out.notes.begin(), out.notes.end(), [](const std::string &n) { return n.find("else for 80-real;90") != std::string::npos; }));
    auto [status, output] = configure(unmeasured);
    QVERIFY2(status == 0, output.c_str());
    QVERIFY2(output.find("softmax_kernel: CUDA architectures 80-real;90 (no GPU found and none measured") != std::string::npos, output.c_str());
    QCOMPARE(cachedArchitectures(unmeasured), std::string("80-real;90"));
    QProcess build;
    build.setProcessEnvironment(env);
    build.setProcessChannelMode(QProcess::MergedChannels);
    build.start(QStringLiteral("cmake"), {QStringLiteral("--build"), QString::fromStdString((unmeasured / "build").string()), QStringLiteral("--target"),
                                          QStringLiteral("softmax_kernel")});
    build.waitForFinished(300000);
    const std::string built = build.readAll().toStdString();
    QVERIFY2(build.exitStatus() == QProcess::NormalExit && build.exitCode() == 0, built.c_str());

    // Measured on sm_90 (90a as compiled): that, without a GPU; with nvidia-smi reporting an 8.6
    // and a 9.0, both, the 9.0 as 90a.
    in.arch = "sm_90";
    const fs::path measured = root / "measured";
    exportCudaPackage(in, measured);
    std::tie(status, output) = configure(measured);
    QVERIFY2(status == 0, output.c_str());
    QCOMPARE(cachedArchitectures(measured), std::string("90a"));
    test::writeScript(bin / "nvidia-smi", "printf '8.6\\n9.0\\n9.0\\n'");
    fs::remove_all(measured / "build");
    std::tie(status, output) = configure(measured);
    QVERIFY2(status == 0, output.c_str());
    QVERIFY2(output.find("CUDA architectures 86;90a (this machine's GPU, from nvidia-smi)") != std::string::npos, output.c_str());
    QCOMPARE(cachedArchitectures(measured), std::string("86;90a"));
    // nvidia-smi failing (a driver that does not answer): as without it.
    test::writeScript(bin / "nvidia-smi", "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver' >&2; exit 9");
    fs::remove_all(measured / "build");
    std::tie(status, output) = configure(measured);
    QVERIFY2(status == 0, output.c_str());
    QCOMPARE(cachedArchitectures(measured), std::string("90a"));
    // The user's choice wins.
    fs::remove_all(measured / "build");
    std::tie(status, output) = configure(measured, {QStringLiteral("-DCMAKE_CUDA_ARCHITECTURES=80")});
    QVERIFY2(status == 0, output.c_str());
    QCOMPARE(cachedArchitectures(measured), std::string("80"));
  }

  // The PyTorch extension's files: the binding's checks and allocations read as written, the Python
  // compiles (PyTorch itself is on the GPU machine: tests/gpu/issue20-check.sh builds and runs it).
  void torchPackages() {
    QTemporaryDir dir;
    const fs::path root(dir.path().toStdString());
    // softmax: x in, y out; sizes from x's shape.
    auto out = exportTorchPackage(inputOf("softmax"), root / "softmax");
    std::string binding = test::readFile(root / "softmax" / "softmax_binding.cpp");
    for (const char *want : {"expect(x, \"x\", at::kFloat, 2);", "const long long rows = x.size(0);", "const long long cols = x.size(1);",
                             "torch::Tensor y = torch::empty(std::vector<int64_t>{(rows), (cols)}, kwb_options.dtype(at::kFloat));",
                             "at::cuda::getCurrentCUDAStream()", "m.def(\"softmax\"", "m.def(\"reference\""})
      QVERIFY2(binding.find(want) != std::string::npos, want);
    QVERIFY(std::find(out.files.begin(), out.files.end(), "test/test_softmax.py") != out.files.end());
    const std::string py = test::readFile(root / "softmax" / "test" / "test_softmax.py");
    QVERIFY(py.find("TORCH_EQUIVALENT = \"torch.softmax(x, dim=1)\"") != std::string::npos);
    QVERIFY(py.find("{\"name\": \"wide\", \"sizes\": {\"rows\": 256, \"cols\": 32768}, \"shapes\": {\"x\": [256, 32768], "
                    "\"y\": [256, 32768]}}") != std::string::npos);
    // reduce-sum: out starts at zero in every seed: the binding makes it, filled.
    exportTorchPackage(inputOf("reduce-sum"), root / "reduce");
    binding = test::readFile(root / "reduce" / "reduce_sum_binding.cpp");
    QVERIFY2(binding.find("torch::Tensor out = torch::full(std::vector<int64_t>{}, 0.0, kwb_options.dtype(at::kFloat));") != std::string::npos,
             binding.c_str());
    QVERIFY(binding.find("const long long n = x.size(0);") != std::string::npos);
    // transpose: a tensor named `in`; out's shape checked from the sizes.
    exportTorchPackage(inputOf("transpose"), root / "transpose");
    binding = test::readFile(root / "transpose" / "transpose_binding.cpp");
    QVERIFY(binding.find("expect(in, \"in\"") != std::string::npos);
    // histogram: bins (inout, constant 0) returned; data's size read.
    exportTorchPackage(inputOf("histogram"), root / "histogram");
    binding = test::readFile(root / "histogram" / "histogram_binding.cpp");
    QVERIFY(binding.find("torch::Tensor bins = torch::full(std::vector<int64_t>{(256LL)}, 0.0, kwb_options.dtype(at::kInt));") != std::string::npos);
    // Issue 46: generators' scale, shift and structure reach the test's TENSORS; a tensor that is
    // module state says so in the README.
    ExportInput structured = inputOf("softmax");
    structured.task.tensors[0].init->scale = 0.5;
    structured.task.tensors[0].init->matrix = Generator::Matrix::Upper;
    structured.task.tensors[0].init->diagonal = -1;
    structured.task.tensors[0].state = "fc.weight";
    exportTorchPackage(structured, root / "structured");
    const std::string structuredPy = test::readFile(root / "structured" / "test" / "test_softmax.py");
    QVERIFY2(structuredPy.find("[(\"normal\", 0.0, 4.0, 0.5, 0.0, \"upper\", -1), (\"uniform\", -100.0, 100.0, 1.0, 0.0, \"none\", 0)]") !=
                 std::string::npos,
             structuredPy.c_str());
    QVERIFY(structuredPy.find("x = x.triu(diagonal)") != std::string::npos);
    const std::string readme = test::readFile(root / "structured" / "README.md");
    QVERIFY2(readme.find("- argument `x: f32 [rows, cols], read (the PyTorch module's fc.weight)`") != std::string::npos, readme.c_str());
    for (const auto &pkg : {"softmax", "reduce", "transpose", "histogram", "structured"}) {
      for (const auto &entry : fs::recursive_directory_iterator(root / pkg)) {
        if (entry.path().extension() != ".py") continue;
        const Run compiled = run(QStringLiteral("python3"), {QStringLiteral("-m"), QStringLiteral("py_compile"), QString::fromStdString(entry.path().string())});
        QVERIFY2(compiled.exitCode == 0, (entry.path().string() + ": " + compiled.err).c_str());
      }
    }
  }

  // The report: every section, Markdown and one self-contained HTML file whose charts are embedded
  // SVG documents that parse.
  void report() {
    QTemporaryDir dir;
    const fs::path root(dir.path().toStdString());
    ExportInput in = inputOf("softmax");
    in.provenance.sourceName = "softmax.cu";
    in.result = test::memoryRunResult(true, {1.5, 2.0, 2.5});
    for (auto &c : in.result->configs) {
      c.timing->candidate.median = 0.2;
      c.timing->candidate.count = 40;
      c.timing->reference.median = 0.4;
      RooflineFloor r;
      r.flops = 5.0 * 1024 * 1024;
      r.bytes = 8.0 * 1024 * 1024;
      r.peakBandwidthBytesPerS = 4.0e12;
      r.peakFlopsPerS = 60e12;
      r.floorMs = 0.0021;
      r.bound = "memory";
      r.ceilings = "measured";
      c.timing->roofline = r;
      c.timing->timer = "cupti";
    }
    in.result->candidate.toolkitVersion = "13.0";
    ReportContext ctx;
    for (int i = 0; i < 6; ++i) ctx.history.push_back({i + 1, "2026-12-04T10:0" + std::to_string(i) + ":00.000Z", "softmax.cu",
                                                      i == 2 ? "incorrect" : "correct", i == 2 ? 0.0 : 1.0 + 0.3 * i, i == 5});
    ctx.experience.push_back({"Case 1, effective, x1.00 (editor)", "the starter", 1.0});
    ctx.experience.push_back({"Case 4, effective, x1.80 (session)", "one warp per row", 1.8});
    ctx.driver = "13.0";
    const auto out = exportReport(in, ctx, root);
    QVERIFY(std::find(out.files.begin(), out.files.end(), "charts/roofline.svg") != out.files.end());
    const std::string md = test::readFile(root / "report.md");
    for (const char *want : {"# softmax: optimized kernel report", "## What it computes", "## Final measurements", "## Speedup history",
                             "## Roofline position", "## Profiler metrics against the baseline", "## What led to it",
                             "## Toolkit, driver and GPU", "| small | correct | 0.2000 |", "![", "charts/speedup-history.svg",
                             "Case 4, effective, x1.80 (session), 1.80x the reference: one warp per row", "CUDA toolkit: 13.0",
                             "Geometric mean speedup over the reference: 1.96x."})
      QVERIFY2(md.find(want) != std::string::npos, want);
    const std::string page = test::readFile(root / "report.html");
    // Self-contained: no file or address outside it.
    std::size_t at = 0, images = 0;
    while ((at = page.find("src=\"", at)) != std::string::npos) {
      at += 5;
      QVERIFY2(page.compare(at, 26, "data:image/svg+xml;base64,") == 0, page.substr(at, 40).c_str());
      const auto end = page.find('"', at);
      const auto svg = base64Decode(page.substr(at + 26, end - at - 26));
      QVERIFY(svg);
      QSvgRenderer renderer(QByteArray::fromStdString(*svg));
      QVERIFY2(renderer.isValid(), svg->substr(0, 200).c_str());
      ++images;
    }
    QCOMPARE(images, std::size_t{2});
    QVERIFY(page.find("href=") == std::string::npos);
    QVERIFY(page.find("&lt;") != std::string::npos);  // the code, escaped

    // A lineage step: the steps that led to it.
    ExportInput step = inputOf("softmax", test::kernelsDir() / "softmax" / "lineage" / "02-warp-shuffle.cu");
    const ReportContext fromLineage = reportContextFor(step, nullptr, nullptr);
    QCOMPARE(fromLineage.lineage.size(), std::size_t{2});
    QVERIFY(fromLineage.lineage[1].what.rfind("step 2: ", 0) == 0);
    exportReport(step, fromLineage, root / "step");
    QVERIFY(test::readFile(root / "step" / "report.md").find("It is step 2 of the task's lineage") != std::string::npos);
  }

  // A run's tunables are not stored: they are read back from its launches.
  void runTunablesFromItsLaunches() {
    QTemporaryDir dir;
    auto ws = Workspace::open(dir.filePath(QStringLiteral("ws.kwb")).toStdString());
    const Task task = loadTask(test::kernelsDir() / "softmax");
    const auto record = ws->recordTaskOpened("softmax", task.folder.string(), "hash");
    auto result = test::memoryRunResult(true, {1.5, 1.5, 1.5});
    for (auto &c : result.configs) {
      const auto *sizes = task.config(c.config);
      QVERIFY(sizes);
      c.candidateLaunch.grid = {sizes->values.at("rows"), 1, 1};
      c.candidateLaunch.block = {512, 1, 1};
    }
    const std::string code = test::readFile(task.folder / task.starterSource());
    const auto id = test::addMemoryRun(*ws, record.id, code, result, "softmax.cu");
    const ExportInput in = exportInputFromRun(task, *ws, id);
    QCOMPARE(in.tunables.at("BLOCK"), std::int64_t{512});
    QVERIFY(in.result && in.result->configs.size() == 3);
    QCOMPARE(in.provenance.run, id);
    QVERIFY(in.notes.empty());
    // The same code as a file: that run's measurements come with it.
    const ExportInput file = exportInputFromFile(task, task.folder / "softmax.cu", code, ws.get());
    QCOMPARE(file.provenance.run, id);
    QVERIFY(file.result);
    // Another task's run, an unknown run: refused.
    QVERIFY_THROWS_EXCEPTION(ExportError, exportInputFromRun(loadTask(test::kernelsDir() / "layernorm"), *ws, id));
    QVERIFY_THROWS_EXCEPTION(ExportError, exportInputFromRun(task, *ws, id + 100));
    QVERIFY_THROWS_EXCEPTION(ExportError, exportInputFromSessionBest(task, *ws, "no-such-session"));
  }

  // kwb export as a user runs it.
  void commandLine() {
    const QString kwb = qEnvironmentVariable("KWB_CLI");
    QVERIFY2(!kwb.isEmpty(), "run through ctest: KWB_CLI names kwb");
    QTemporaryDir dir;
    const QString wsPath = dir.filePath(QStringLiteral("ws.kwb"));
    std::int64_t id = 0;
    {
      auto ws = Workspace::open(wsPath.toStdString());
      const auto record = ws->recordTaskOpened("softmax", (test::kernelsDir() / "softmax").string(), "hash");
      id = test::addMemoryRun(*ws, record.id, "extern \"C\" __global__ void softmax(const float *x, float *y, long long r, long long c) {}\n",
                              test::memoryRunResult(true, {2.0, 2.0, 2.0}), "softmax.cu");
    }
    const QString task = QString::fromStdString((test::kernelsDir() / "softmax").string());
    const QString to = dir.filePath(QStringLiteral("out"));
    Run r = run(kwb, {QStringLiteral("export"), QStringLiteral("run:%1").arg(id), QStringLiteral("--task"), task, QStringLiteral("--to"), to,
                      QStringLiteral("--workspace"), wsPath, QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["from"].get<std::string>(), "run " + std::to_string(id));
    QVERIFY(fs::exists(fs::path(to.toStdString()) / "include" / "softmax.h"));
    QVERIFY(test::readFile(fs::path(to.toStdString()) / "README.md").find("| small | correct |") != std::string::npos);
    // Again into the same folder: refused, then written with --force.
    r = run(kwb, {QStringLiteral("export"), QStringLiteral("run:%1").arg(id), QStringLiteral("--task"), task, QStringLiteral("--to"), to,
                  QStringLiteral("--workspace"), wsPath});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("is not empty; name a new folder, or write over it (kwb export --force") != std::string::npos, r.err.c_str());
    r = run(kwb, {QStringLiteral("export"), QStringLiteral("run:%1").arg(id), QStringLiteral("--task"), task, QStringLiteral("--to"), to,
                  QStringLiteral("--workspace"), wsPath, QStringLiteral("--force")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.find("Exported softmax (run ") != std::string::npos);
    // The starter as a file, a tunable set.
    r = run(kwb, {QStringLiteral("export"), task + QStringLiteral("/softmax.cu"), QStringLiteral("--task"), task, QStringLiteral("--to"),
                  dir.filePath(QStringLiteral("starter")), QStringLiteral("--set"), QStringLiteral("BLOCK=1024"), QStringLiteral("--workspace"),
                  wsPath});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QVERIFY(test::readFile(dir.filePath(QStringLiteral("starter/src/softmax_kernel.cu")).toStdString()).find("#define BLOCK 1024") !=
            std::string::npos);
    // Refusals, each naming what to fix.
    r = run(kwb, {QStringLiteral("export"), QStringLiteral("run:%1").arg(id + 9), QStringLiteral("--task"), task, QStringLiteral("--to"),
                  dir.filePath(QStringLiteral("x")), QStringLiteral("--workspace"), wsPath});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("has no run " + std::to_string(id + 9)) != std::string::npos, r.err.c_str());
    r = run(kwb, {QStringLiteral("export"), QStringLiteral("session:nope"), QStringLiteral("--task"), task, QStringLiteral("--to"),
                  dir.filePath(QStringLiteral("x")), QStringLiteral("--workspace"), wsPath});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("has no session nope") != std::string::npos, r.err.c_str());
    r = run(kwb, {QStringLiteral("export"), QStringLiteral("run:%1").arg(id), QStringLiteral("--task"), task, QStringLiteral("--to"),
                  dir.filePath(QStringLiteral("x")), QStringLiteral("--workspace"), wsPath, QStringLiteral("--format"), QStringLiteral("zip")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("--format is cuda, torch or report") != std::string::npos, r.err.c_str());
    r = run(kwb, {QStringLiteral("export"), QStringLiteral("run:%1").arg(id), QStringLiteral("--task"), task, QStringLiteral("--to"),
                  dir.filePath(QStringLiteral("x")), QStringLiteral("--workspace"), wsPath, QStringLiteral("--set"), QStringLiteral("NOPE=1")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("NOPE") != std::string::npos, r.err.c_str());
  }
};

QTEST_MAIN(TestKernelExport)
#include "tst_kernel_export.moc"
