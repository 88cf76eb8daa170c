// The task manifest (task.toml): the bundled manifests parse into the expected model, and every
// malformed manifest is refused with one exact, user-facing message naming file, line and field.
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <sys/stat.h>
#include <fstream>
#include <sstream>

#include "core/eval/input_generator.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"
#include "core/task/toml_shape.h"
#include "core/text/printable.h"
#include "core/task/task_json.h"

using namespace kwb;

namespace {

// A minimal valid manifest. Cases below edit it line by line (1-based), so the line numbers in
// the expected messages can be read off this listing.
const char *const kBase[] = {
    /*  1 */ "name = \"t\"",
    /*  2 */ "description = \"d\"",
    /*  3 */ "sizes = [\"rows\", \"cols\"]",
    /*  4 */ "[[configs]]",
    /*  5 */ "name = \"c\"",
    /*  6 */ "rows = 4",
    /*  7 */ "cols = 8",
    /*  8 */ "[tensors.x]",
    /*  9 */ "dtype = \"f32\"",
    /* 10 */ "shape = [\"rows\", \"cols\"]",
    /* 11 */ "role = \"in\"",
    /* 12 */ "init = { kind = \"uniform\", low = 0.0, high = 1.0 }",
    /* 13 */ "[tensors.y]",
    /* 14 */ "dtype = \"f32\"",
    /* 15 */ "shape = [\"rows\", \"cols\"]",
    /* 16 */ "role = \"out\"",
    /* 17 */ "tolerance = { rtol = 1e-5, atol = 1e-6 }",
    /* 18 */ "[reference]",
    /* 19 */ "source = \"ref.cu\"",
    /* 20 */ "kernel = \"ref\"",
    /* 21 */ "grid = [\"rows\"]",
    /* 22 */ "block = [32]",
    /* 23 */ "args = [\"x\", \"y\", \"rows\", \"cols\"]",
    /* 24 */ "[cost]",
    /* 25 */ "flops = \"rows * cols\"",
    /* 26 */ "bytes = \"8 * rows * cols\"",
};

// The base manifest with some lines replaced (an empty replacement blanks the line, keeping the
// numbering of the others) and text appended from line 27 on.
QString manifest(std::initializer_list<std::pair<int, QString>> edits = {}, const QString &append = {}) {
  QStringList lines;
  for (const char *line : kBase) lines << QString::fromUtf8(line);
  for (const auto &[number, text] : edits) lines[number - 1] = text;
  QString out = lines.join('\n') + '\n';
  if (!append.isEmpty()) out += append + '\n';
  return out;
}

// The base manifest with a PyTorch-only reference (python on line 19, `referenceMore` on line 23),
// [launch] from line 27, [editor] on 32-33, and a third input w on lines 34-38 (a 2-D [cols, cols]
// f32 uniform) with `wMore` from line 39 on. `edits` replace base lines first, as manifest() does.
QString torchManifest(const QString &referenceMore, const QString &wMore,
                      std::initializer_list<std::pair<int, QString>> edits = {}) {
  QStringList lines;
  for (const char *line : kBase) lines << QString::fromUtf8(line);
  for (const auto &[number, text] : edits) lines[number - 1] = text;
  lines[18] = "python = \"ref.py\"";
  for (int i = 19; i <= 21; ++i) lines[i] = "";
  lines[22] = referenceMore;
  lines << "[launch]" << "kernel = \"k\"" << "grid = [\"rows\"]" << "block = [32]" << "args = [\"x\", \"y\", \"w\"]"
        << "[editor]" << "starter = \"k.cu\"" << "[tensors.w]" << "dtype = \"f32\"" << "shape = [\"cols\", \"cols\"]"
        << "role = \"in\"" << "init = { kind = \"uniform\", low = -1.0, high = 1.0 }" << wMore;
  return lines.join('\n') + '\n';
}

QString errorOf(const QString &text, const std::filesystem::path &folder = {}) {
  try {
    parseManifest(text.toStdString(), "task.toml", folder);
  } catch (const ManifestError &e) {
    return QString::fromStdString(e.what());
  }
  return QStringLiteral("(parsed without error)");
}

void writeFile(const QString &path, const QString &text) {
  std::ofstream out(path.toStdString(), std::ios::binary);
  out << text.toStdString();
}

std::filesystem::path sourceDir() { return std::filesystem::path(KWB_SOURCE_DIR); }

}  // namespace

class TestManifestParser : public QObject {
  Q_OBJECT

 private slots:
  void baseManifestParses();
  void softmaxManifest();
  void sgemmManifest();
  void validVariants();
  void moduleStateForwardAndInit();
  void generatorScaleShiftAndMatrix();
  void malformed_data();
  void malformed();
  void moduleAndGeneratorErrors_data();
  void moduleAndGeneratorErrors();
  void sourceFiles_data();
  void sourceFiles();
  void errorParts();
  void largeTunableSpaceChecksFirstPoint();
  void json();
  void shapeLimitsBeforeParsing();
  void nonAsciiOnlyInStringsAndComments();
  void sourcesStayInsideTheFolder();
  void sourceFilesAreRegularAndBounded();
  void messagesEscapeControlCharacters();
};

void TestManifestParser::baseManifestParses() {
  const Task task = parseManifest(manifest().toStdString(), "task.toml", {});
  QCOMPARE(task.name, std::string("t"));
  QCOMPARE(task.description, std::string("d"));
  QCOMPARE(task.sizeNames, (std::vector<std::string>{"rows", "cols"}));
  QCOMPARE(task.seeds, (std::vector<std::uint64_t>{1, 2, 3}));  // the default
  QCOMPARE(task.configs.size(), std::size_t{1});
  QCOMPARE(task.configs[0].values.at("rows"), std::int64_t{4});
  QCOMPARE(task.tensors.size(), std::size_t{2});
  QCOMPARE(task.tensors[0].line, 8);
  QCOMPARE(task.tensors[1].line, 13);
  QVERIFY(!task.launch);
  QVERIFY(task.tunables.empty());
  QVERIFY(!task.starter);
  QCOMPARE(task.reference.launch.sharedBytes.text(), std::string("0"));
  QCOMPARE(task.starterSource(), std::filesystem::path("ref.cu"));
  QCOMPARE(task.manifestPath, std::filesystem::path("task.toml"));
}

void TestManifestParser::softmaxManifest() {
  const Task task = loadTask(sourceDir() / "kernels" / "softmax");
  QCOMPARE(task.name, std::string("softmax"));
  QCOMPARE(task.description, std::string("Row-wise softmax of a row-major f32 matrix"));
  QCOMPARE(task.sizeNames, (std::vector<std::string>{"rows", "cols"}));
  QCOMPARE(task.seeds, (std::vector<std::uint64_t>{1, 2, 3}));
  QCOMPARE(task.configs.size(), std::size_t{3});
  QCOMPARE(task.configs[0].name, std::string("small"));
  QCOMPARE(task.configs[1].name, std::string("wide"));
  QCOMPARE(task.configs[1].values.at("cols"), std::int64_t{32768});
  QCOMPARE(task.configs[2].name, std::string("h200"));
  QCOMPARE(task.configs[2].values.at("rows"), std::int64_t{8192});
  QVERIFY(task.config("wide") == &task.configs[1]);
  QVERIFY(task.config("nope") == nullptr);
  QCOMPARE(task.torchEquivalent, std::string("torch.softmax(x, dim=1)"));

  QCOMPARE(task.tensors.size(), std::size_t{2});
  const Tensor *x = task.tensor("x");
  QVERIFY(x);
  QCOMPARE(x->dtype, DType::F32);
  QCOMPARE(x->role, TensorRole::In);
  QCOMPARE(x->shape.size(), std::size_t{2});
  QCOMPARE(x->shape[1].text(), std::string("cols"));
  QVERIFY(x->init);
  QCOMPARE(x->init->kind, Generator::Kind::Normal);
  QCOMPARE(x->init->a, 0.0);
  QCOMPARE(x->init->b, 4.0);
  QCOMPARE(x->init->seedOffset, std::uint64_t{0});
  QVERIFY(!x->tolerance);
  const Tensor *y = task.tensor("y");
  QVERIFY(y);
  QCOMPARE(y->role, TensorRole::Out);
  QVERIFY(!y->init);
  QVERIFY(y->tolerance);
  QVERIFY(!y->tolerance->exact);
  QCOMPARE(y->tolerance->rtol, 1e-5);
  QCOMPARE(y->tolerance->atol, 1e-7);
  QCOMPARE(y->line, 30);

  QCOMPARE(task.reference.source, std::filesystem::path("reference.cu"));
  QCOMPARE(task.reference.launch.kernel, std::string("softmax_reference"));
  QCOMPARE(task.reference.launch.grid.size(), std::size_t{1});
  QCOMPARE(task.reference.launch.block[0].text(), std::string("256"));
  QCOMPARE(task.reference.launch.args, (std::vector<std::string>{"x", "y", "rows", "cols"}));
  QVERIFY(task.launch);
  QCOMPARE(task.launch->kernel, std::string("softmax"));
  QCOMPARE(task.launch->block[0].text(), std::string("BLOCK"));
  QCOMPARE(task.tunables.size(), std::size_t{1});
  QCOMPARE(task.tunables[0].name, std::string("BLOCK"));
  QCOMPARE(task.tunables[0].values, (std::vector<std::int64_t>{128, 256, 512, 1024}));
  QCOMPARE(task.flops.text(), std::string("5 * rows * cols"));
  QCOMPARE(task.flops.evaluate(task.configs[0].values), std::int64_t{5 * 1024 * 1024});
  QCOMPARE(task.bytes.text(), std::string("2 * 4 * rows * cols"));
  QVERIFY(task.starter);
  QCOMPARE(*task.starter, std::filesystem::path("softmax.cu"));
  QCOMPARE(task.starterSource(), std::filesystem::path("softmax.cu"));
  QVERIFY(task.folder.is_absolute());
  QCOMPARE(task.folder.filename(), std::filesystem::path("softmax"));
  QCOMPARE(task.manifestPath, task.folder / "task.toml");
}

void TestManifestParser::sgemmManifest() {
  const Task task = loadTask(sourceDir() / "kernels" / "sgemm" / "task.toml");
  QCOMPARE(task.name, std::string("sgemm"));
  QCOMPARE(task.sizeNames, (std::vector<std::string>{"M", "N", "K"}));
  QCOMPARE(task.configs.size(), std::size_t{3});
  QCOMPARE(task.configs[1].name, std::string("odd"));
  QCOMPARE(task.configs[1].values, (std::map<std::string, std::int64_t>{{"M", 1000}, {"N", 1100}, {"K", 300}}));
  QCOMPARE(task.tensors.size(), std::size_t{3});
  // Manifest order, not alphabetical: A, B, C happen to agree, so check the roles too.
  QCOMPARE(task.tensors[0].name, std::string("A"));
  QCOMPARE(task.tensors[1].name, std::string("B"));
  QCOMPARE(task.tensors[2].name, std::string("C"));
  QCOMPARE(task.tensors[0].init->kind, Generator::Kind::Uniform);
  QCOMPARE(task.tensors[0].init->a, -1.0);
  QCOMPARE(task.tensors[0].init->b, 1.0);
  QCOMPARE(task.tensors[1].init->seedOffset, std::uint64_t{1});
  QCOMPARE(task.tensors[2].role, TensorRole::Out);
  QCOMPARE(task.tensors[2].tolerance->rtol, 1e-4);
  QCOMPARE(task.tensors[2].tolerance->atol, 1e-3);
  QCOMPARE(task.reference.launch.grid.size(), std::size_t{2});
  QCOMPARE(task.reference.launch.grid[0].text(), std::string("ceil_div(N, 16)"));
  QCOMPARE(task.reference.launch.grid[1].evaluate(task.configs[1].values), std::int64_t{63});
  QCOMPARE(task.reference.launch.block.size(), std::size_t{2});
  QCOMPARE(task.reference.launch.args, (std::vector<std::string>{"A", "B", "C", "M", "N", "K"}));
  QVERIFY(task.launch);
  QCOMPARE(task.launch->grid[0].identifiers(), (std::vector<std::string>{"N", "TILE"}));
  QCOMPARE(task.tunables.size(), std::size_t{1});
  QCOMPARE(task.tunables[0].values, (std::vector<std::int64_t>{8, 16, 32}));
  QCOMPARE(task.flops.evaluate(task.configs[2].values), std::int64_t{2} * 4096 * 4096 * 4096);
  QCOMPARE(task.bytes.text(), std::string("4 * (M * K + K * N + M * N)"));
  QCOMPARE(task.starterSource(), std::filesystem::path("sgemm.cu"));
}

// Parses a manifest that must be valid; a refusal fails the test with its message.
#define PARSE(task, text)                                               \
  Task task;                                                            \
  try {                                                                 \
    task = parseManifest(QString(text).toStdString(), "task.toml", {}); \
  } catch (const ManifestError &e) {                                    \
    QFAIL(e.what());                                                    \
  }

void TestManifestParser::validVariants() {
  {
    // Parameters: an integer one in shapes and launches (and every configuration's values), a real
    // one passed as an argument; a configuration with a launch of its own (issue 21).
    PARSE(t, manifest({{7, "cols = 8\n[[configs]]\nname = \"long\"\nrows = 2\ncols = 4194304\n"
                           "launch = { kernel = \"split\", grid = [\"rows * SPLIT\"] }\n"
                           "reference_launch = { block = [256] }"},
                       {10, "shape = [\"rows\", \"cols\", \"dim\"]"},
                       {23, "args = [\"x\", \"y\", \"rows\", \"cols\", \"eps\"]"}},
                      "[params]\ndim = { value = 1, dtype = \"i32\" }\neps = 1e-5\nscale = { value = 2, dtype = \"f64\" }\n"
                      "[launch]\nkernel = \"k\"\ngrid = [\"rows\"]\nblock = [\"BLOCK\"]\nargs = [\"x\", \"y\", \"eps\", \"dim\"]\n"
                      "[tunables]\nBLOCK = [128, 256]\nSPLIT = [4, 8]"));
    QCOMPARE(t.params.size(), std::size_t(3));
    QCOMPARE(t.params[0].dtype, DType::I32);
    QCOMPARE(t.params[1].dtype, DType::F32);
    QCOMPARE(t.params[1].literal(), std::string("1e-05"));
    QCOMPARE(t.params[2].literal(), std::string("2.0"));
    QCOMPARE(t.configs[0].values.at("dim"), std::int64_t(1));
    QVERIFY(!t.configs[0].launch);
    QCOMPARE(t.candidateLaunch(t.configs[0]).kernel, std::string("k"));
    QCOMPARE(t.candidateLaunch(t.configs[1]).kernel, std::string("split"));
    QCOMPARE(t.candidateLaunch(t.configs[1]).grid[0].text(), std::string("rows * SPLIT"));
    QCOMPARE(t.candidateLaunch(t.configs[1]).block[0].text(), std::string("BLOCK"));  // from [launch]
    QCOMPARE(t.candidateLaunch(t.configs[1]).args, t.launch->args);
    QCOMPARE(t.referenceLaunch(t.configs[1]).block[0].text(), std::string("256"));
    QCOMPARE(t.referenceLaunch(t.configs[1]).kernel, std::string("ref"));
    QCOMPARE(t.candidateKernels(), (std::vector<std::string>{"k", "split"}));
    const auto argSlots = kwb::scalarArguments(t, t.configs[0]);
    float eps = 0;
    const auto bits = static_cast<std::uint64_t>(argSlots.at("eps"));
    std::memcpy(&eps, &bits, sizeof eps);
    QCOMPARE(eps, 1e-5f);
    QCOMPARE(argSlots.at("dim"), std::int64_t(1));
    QCOMPARE(kwb::paramDefines(t).front(), (std::pair<std::string, std::string>{"PARAM_dim", "1"}));
  }
  {
    // A PyTorch-only reference: [launch] and a starter are the candidate's.
    PARSE(t, manifest({{19, "python = \"ref.py\"\ninit = [\"dim\"]"}, {20, ""}, {21, ""}, {22, ""}, {23, ""}},
                      "[params]\ndim = 1\n[launch]\nkernel = \"k\"\ngrid = [\"rows\"]\nblock = [32]\nargs = [\"x\", \"y\", \"dim\"]\n"
                      "[editor]\nstarter = \"k.cu\""));
    QVERIFY(!t.reference.hasCuda());
    QCOMPARE(t.reference.python.string(), std::string("ref.py"));
    QCOMPARE(*t.reference.init, std::vector<std::string>{"dim"});
  }
  {
    // Several generators: the seeds cycle through them (issue 15: extremes beside typical values).
    PARSE(t, manifest({{12, "init = [{ kind = \"normal\", mean = 0.0, std = 4.0 }, { kind = \"uniform\", low = -1000.0, "
                            "high = 1000.0 }, { kind = \"constant\", value = 7.0 }]"}}));
    const auto &x = t.tensors[0];
    QCOMPARE(x.init->kind, Generator::Kind::Normal);
    QCOMPARE(x.moreInits.size(), std::size_t(2));
    QCOMPARE(kwb::generatorForSeed(x, 1).kind, Generator::Kind::Normal);
    QCOMPARE(kwb::generatorForSeed(x, 2).kind, Generator::Kind::Uniform);
    QCOMPARE(kwb::generatorForSeed(x, 2).b, 1000.0);
    QCOMPARE(kwb::generatorForSeed(x, 3).kind, Generator::Kind::Constant);
    QCOMPARE(kwb::generatorForSeed(x, 4).kind, Generator::Kind::Normal);
    QCOMPARE(kwb::generatorForSeed(x, 0).kind, Generator::Kind::Normal);
    const auto seed3 = kwb::generateInput(x, 16, 3);
    float v = 0;
    std::memcpy(&v, seed3.data() + 4 * 9, 4);
    QCOMPARE(v, 7.0f);  // seed 3 fills with the constant
    // kwb task show --json lists all of them.
    QVERIFY(kwb::taskToJson(t)["tensors"][0]["init"].is_array());
    QCOMPARE(kwb::taskToJson(t)["tensors"][0]["init"].size(), std::size_t(3));
  }
  {
    PARSE(t, manifest({{12, "init = { kind = \"randint\", low = -3, high = 4 }"}}));
    QCOMPARE(t.tensors[0].init->kind, Generator::Kind::RandInt);  // randint on a float tensor
    QCOMPARE(t.tensors[0].init->a, -3.0);
    QCOMPARE(t.tensors[0].init->b, 4.0);
  }
  {
    PARSE(t, manifest({{12, "init = { kind = \"uniform\", low = -1, high = 1 }"},
                       {17, "tolerance = { atol = 0 }"}}));
    QCOMPARE(t.tensors[0].init->a, -1.0);  // integers where numbers are expected
    QCOMPARE(t.tensors[0].init->b, 1.0);
    QCOMPARE(t.tensors[0].init->seedOffset, std::uint64_t{0});
    QVERIFY(!t.tensors[1].tolerance->exact);
    QCOMPARE(t.tensors[1].tolerance->atol, 0.0);
    QCOMPARE(t.tensors[1].tolerance->rtol, 0.0);  // atol alone: rtol 0
  }
  {
    PARSE(t, manifest({{17, "tolerance = { rtol = 1e-3 }"}}));
    QVERIFY(!t.tensors[1].tolerance->exact);
    QCOMPARE(t.tensors[1].tolerance->rtol, 1e-3);
    QCOMPARE(t.tensors[1].tolerance->atol, 0.0);  // rtol alone: atol 0
  }
  {
    PARSE(t, manifest({{17, "tolerance = \"exact\""}}));
    QVERIFY(t.tensors[1].tolerance->exact);  // allowed on a float output too
  }
  {
    PARSE(t, manifest({{9, "dtype = \"i32\""},
                       {12, "init = { kind = \"arange\", start = 0, step = 3 }"},
                       {14, "dtype = \"u8\""},
                       {17, "tolerance = \"exact\""}}));
    QCOMPARE(t.tensors[0].dtype, DType::I32);
    QCOMPARE(t.tensors[0].init->kind, Generator::Kind::Arange);
    QCOMPARE(t.tensors[0].init->a, 0.0);
    QCOMPARE(t.tensors[0].init->b, 3.0);
    QCOMPARE(t.tensors[1].dtype, DType::U8);
    QVERIFY(t.tensors[1].tolerance->exact);
  }
  {
    // arange filling u8 up to 248 over the 32 elements of configuration c; with step 0 bool holds it.
    PARSE(t, manifest({{9, "dtype = \"u8\""}, {12, "init = { kind = \"arange\", start = 0, step = 8 }"}}));
    QCOMPARE(t.tensors[0].init->b, 8.0);
    PARSE(b, manifest({{9, "dtype = \"bool\""}, {12, "init = { kind = \"arange\", start = 1, step = 0 }"}}));
    QCOMPARE(b.tensors[0].init->a, 1.0);
    PARSE(down,
          manifest({{9, "dtype = \"i8\""}, {12, "init = { kind = \"arange\", start = 127, step = -8 }"}}));
    QCOMPARE(down.tensors[0].init->b, -8.0);  // 127 down to -121
  }
  {
    PARSE(t, manifest({{9, "dtype = \"bool\""}, {12, "init = { kind = \"constant\", value = true }"}}));
    QCOMPARE(t.tensors[0].dtype, DType::Bool);
    QCOMPARE(t.tensors[0].init->kind, Generator::Kind::Constant);
    QCOMPARE(t.tensors[0].init->a, 1.0);
    PARSE(f, manifest({{9, "dtype = \"i8\""}, {12, "init = { kind = \"constant\", value = false }"}}));
    QCOMPARE(f.tensors[0].init->a, 0.0);
  }
  {
    // Parameters at the edge of f16's finite range.
    PARSE(t, manifest({{9, "dtype = \"f16\""},
                       {12, "init = { kind = \"uniform\", low = -65504, high = 65504 }"}}));
    QCOMPARE(t.tensors[0].dtype, DType::F16);
    QCOMPARE(t.tensors[0].init->b, 65504.0);
  }
  {
    PARSE(t,
          manifest(
              {{16, "role = \"inout\""},
               {17, "tolerance = \"exact\"\ninit = { kind = \"constant\", value = 0.5, seed_offset = 7 }"}}));
    const Tensor &y = t.tensors[1];
    QCOMPARE(y.role, TensorRole::InOut);
    QVERIFY(y.init);  // an inout tensor has both
    QVERIFY(y.tolerance);
    QCOMPARE(y.init->kind, Generator::Kind::Constant);
    QCOMPARE(y.init->a, 0.5);
    QCOMPARE(y.init->seedOffset, std::uint64_t{7});
    QVERIFY(y.tolerance->exact);
  }
  {
    PARSE(t,
          manifest({{10, "shape = []"}, {15, "shape = [2, \"ceil_div(rows, 3)\", \"max(cols - 8, 0)\"]"}}));
    QVERIFY(t.tensors[0].shape.empty());  // a scalar
    const auto &shape = t.tensors[1].shape;
    QCOMPARE(shape.size(), std::size_t{3});
    QCOMPARE(shape[0].text(), std::string("2"));
    QCOMPARE(shape[1].text(), std::string("ceil_div(rows, 3)"));
    QCOMPARE(shape[1].evaluate(t.configs[0].values), std::int64_t{2});
    QCOMPARE(shape[2].evaluate(t.configs[0].values), std::int64_t{0});
  }
  {
    PARSE(t, manifest({{12, "[tensors.x.init]\nkind = \"normal\"\nmean = 1\nstd = 0.5"}}));
    QCOMPARE(t.tensors[0].init->kind, Generator::Kind::Normal);  // init written as a table
    QCOMPARE(t.tensors[0].init->a, 1.0);
    QCOMPARE(t.tensors[0].init->b, 0.5);
  }
  {
    PARSE(t, manifest({{2, "description = \"\"\nseeds = [0, 42]"}}));
    QCOMPARE(t.description, std::string());
    QCOMPARE(t.seeds, (std::vector<std::uint64_t>{0, 42}));
  }
  {
    PARSE(t, manifest({},
                      "[launch]\nkernel = \"k\"\ngrid = [\"ceil_div(rows, TILE)\", 1, 1]\nblock = [\"TILE\", "
                      "\"TILE\"]\nshared_bytes = \"4 * TILE * TILE\"\nargs = [\"y\", \"x\", \"cols\"]\n"
                      "[tunables]\nTILE = [8, 16, 32]"));
    QVERIFY(t.launch);
    QCOMPARE(t.launch->kernel, std::string("k"));
    QCOMPARE(t.launch->grid.size(), std::size_t{3});
    QCOMPARE(t.launch->grid[2].text(), std::string("1"));
    QCOMPARE(t.launch->block[1].text(), std::string("TILE"));
    QCOMPARE(t.launch->sharedBytes.text(), std::string("4 * TILE * TILE"));
    QCOMPARE(t.launch->args, (std::vector<std::string>{"y", "x", "cols"}));
    QCOMPARE(t.tunables.size(), std::size_t{1});
    QCOMPARE(t.tunables[0].name, std::string("TILE"));
    QCOMPARE(t.tunables[0].values, (std::vector<std::int64_t>{8, 16, 32}));
  }
  {
    PARSE(t,
          manifest({}, "[launch]\nkernel = \"k\"\ngrid = [\"rows\"]\nblock = [64]\nargs = [\"x\", \"y\"]"));
    QVERIFY(t.launch);
    QCOMPARE(t.launch->sharedBytes.text(), std::string("0"));  // shared_bytes defaults to 0
    QCOMPARE(t.launch->sharedBytes.evaluate({}), std::int64_t{0});
    QVERIFY(t.tunables.empty());
  }
  {
    PARSE(t, manifest({{2, "allow_libraries = [\"cublas\", \"cublasLt\"]\ndescription = \"d\""}}));
    QCOMPARE(t.allowedLibraries, (std::vector<std::string>{"cublas", "cublasLt"}));
    QCOMPARE(kwb::vendorLibraryOf("/usr/local/cuda/lib64/libcublasLt.so.13"), std::string("cublasLt"));
    QCOMPARE(kwb::vendorLibraryOf("libcublas.so.13"), std::string("cublas"));
    QCOMPARE(kwb::vendorLibraryOf("/lib/libcudnn_ops.so.9"), std::string("cudnn"));
    QCOMPARE(kwb::vendorLibraryOf("/lib/libcudart.so.13"), std::string());
    QCOMPARE(kwb::vendorLibraryOf("/lib/libnppc.so.13"), std::string("npp"));
    QCOMPARE(kwb::vendorLibraryOf("/lib/libcurl.so.4"), std::string());
  }
  {
    PARSE(t, manifest({}, "[editor]"));
    QVERIFY(!t.starter);
    QCOMPARE(t.starterSource(), std::filesystem::path("ref.cu"));
  }
  {
    PARSE(t, manifest({{19, "source = \"src/../ref.cu\""}}));  // stays inside the folder
    QCOMPARE(t.reference.source, std::filesystem::path("src/../ref.cu"));
  }
}

// Issue 46: [tensors.X] state, [reference] forward, and init naming sizes, read back as written
// (the model, forwardArguments and kwb task show --json).
void TestManifestParser::moduleStateForwardAndInit() {
  {
    PARSE(t, torchManifest("forward = [\"alpha\", \"x\"]\ninit = [\"cols\", \"alpha\"]",
                           "state = \"layers.0.weight\"\n[params]\nalpha = 0.5"));
    QCOMPARE(t.tensors.size(), std::size_t(3));
    QCOMPARE(t.tensors[0].state, std::string());
    QCOMPARE(t.tensors[2].name, std::string("w"));
    QCOMPARE(t.tensors[2].state, std::string("layers.0.weight"));
    QCOMPARE(*t.reference.forward, (std::vector<std::string>{"alpha", "x"}));
    QCOMPARE(kwb::forwardArguments(t), (std::vector<std::string>{"alpha", "x"}));
    QCOMPARE(*t.reference.init, (std::vector<std::string>{"cols", "alpha"}));  // a size and a parameter
    const auto j = kwb::taskToJson(t);
    QCOMPARE(j["tensors"][2]["state"].get<std::string>(), std::string("layers.0.weight"));
    QVERIFY(!j["tensors"][0].contains("state"));
    QCOMPARE(j["reference"]["forward"], nlohmann::json({"alpha", "x"}));
    QCOMPARE(j["reference"]["init"], nlohmann::json({"cols", "alpha"}));
  }
  {
    // No forward: every in/inout tensor without state, in manifest order (w is state).
    PARSE(t, torchManifest("", "state = \"h0\""));
    QVERIFY(!t.reference.forward);
    QVERIFY(!t.reference.init);
    QCOMPARE(kwb::forwardArguments(t), (std::vector<std::string>{"x"}));
    QCOMPARE(kwb::taskToJson(t)["reference"]["forward"], nlohmann::json({"x"}));
  }
  {
    // Without state w is passed to forward; an empty forward is allowed when every input is state.
    PARSE(t, torchManifest("", ""));
    QCOMPARE(kwb::forwardArguments(t), (std::vector<std::string>{"x", "w"}));
    PARSE(u, torchManifest("forward = []", "state = \"fc.weight\"", {{11, "role = \"in\"\nstate = \"fc.bias\""}}));
    QCOMPARE(u.tensors[0].state, std::string("fc.bias"));
    QCOMPARE(kwb::forwardArguments(u), std::vector<std::string>{});
  }
  {
    // module_constants: sizes (and integer parameters) set in the module per configuration.
    PARSE(t, torchManifest("module_constants = [\"rows\", \"cols\", \"k\"]", "[params]\nk = 3"));
    QCOMPARE(t.reference.moduleConstants, (std::vector<std::string>{"rows", "cols", "k"}));
    QCOMPARE(kwb::taskToJson(t)["reference"]["module_constants"], nlohmann::json({"rows", "cols", "k"}));
  }
  {
    // draw: forward's random call the tensor stands for; not an argument of forward.
    PARSE(t, torchManifest("", "draw = 1"));
    QCOMPARE(t.tensors[2].draw, 1);
    QVERIFY(t.tensors[2].givenToModule());
    QCOMPARE(kwb::forwardArguments(t), (std::vector<std::string>{"x"}));
    QCOMPARE(kwb::taskToJson(t)["tensors"][2]["draw"].get<int>(), 1);
    QVERIFY(!kwb::taskToJson(t)["tensors"][0].contains("draw"));
    PARSE(u, torchManifest("", "draw = 1", {{11, "role = \"in\"\ndraw = 2"}}));
    QCOMPARE(u.tensors[0].draw, 2);
    QCOMPARE(kwb::forwardArguments(u), std::vector<std::string>{});
  }
  for (const char *key : {"conv.weight", "layers.0.weight", "h0", "a.1.b_2.3", "_x"}) {
    PARSE(t, torchManifest("", QString("state = \"%1\"").arg(key)));
    QCOMPARE(t.tensors[2].state, std::string(key));
  }
}

void TestManifestParser::generatorScaleShiftAndMatrix() {
  {
    // torch.randint(0, 2, s).float() * 2 - 1
    PARSE(t, manifest({{12, "init = { kind = \"randint\", low = 0, high = 2, scale = 2.0, shift = -1.0 }"}}));
    const Generator &g = *t.tensors[0].init;
    QCOMPARE(g.kind, Generator::Kind::RandInt);
    QCOMPARE(g.scale, 2.0);
    QCOMPARE(g.shift, -1.0);
    QCOMPARE(g.matrix, Generator::Matrix::None);
    QCOMPARE(kwb::taskToJson(t)["tensors"][0]["init"],
             nlohmann::json({{"kind", "randint"}, {"low", 0}, {"high", 2}, {"seed_offset", 0}, {"scale", 2.0}, {"shift", -1.0}}));
    QCOMPARE(kwb::generatorExtrasText(g), std::string("scale 2, shift -1"));
  }
  {
    // The defaults: nothing in the JSON, nothing in the text.
    PARSE(t, manifest());
    const Generator &g = *t.tensors[0].init;
    QCOMPARE(g.scale, 1.0);
    QCOMPARE(g.shift, 0.0);
    QCOMPARE(g.matrix, Generator::Matrix::None);
    QCOMPARE(g.diagonal, std::int64_t(0));
    QVERIFY(!kwb::taskToJson(t)["tensors"][0]["init"].contains("scale"));
    QCOMPARE(kwb::generatorExtrasText(g), std::string());
  }
  {
    // Values need only fit after scale and shift: randint [0, 200) shifted by -100 fits i8.
    PARSE(t, manifest({{9, "dtype = \"i8\""}, {12, "init = { kind = \"randint\", low = 0, high = 200, shift = -100 }"},
                       {14, "dtype = \"i8\""}, {17, "tolerance = \"exact\""}}));
    QCOMPARE(t.tensors[0].init->shift, -100.0);
  }
  {
    // Every generator kind takes them; a list of generators each its own.
    PARSE(t, manifest({{10, "shape = [\"cols\", \"cols\"]"},
                       {12, "init = [{ kind = \"normal\", mean = 0.0, std = 1.0, matrix = \"symmetric\", scale = 0.5 }, "
                            "{ kind = \"uniform\", low = 1.0, high = 2.0, matrix = \"upper\", diagonal = 1 }, "
                            "{ kind = \"arange\", start = 0.0, step = 1.0, matrix = \"lower\", diagonal = -1, shift = 3.0 }, "
                            "{ kind = \"constant\", value = 1.0, matrix = \"lower\" }]"}}));
    const auto &x = t.tensors[0];
    QCOMPARE(x.init->matrix, Generator::Matrix::Symmetric);
    QCOMPARE(x.init->scale, 0.5);
    QCOMPARE(x.moreInits[0].matrix, Generator::Matrix::Upper);
    QCOMPARE(x.moreInits[0].diagonal, std::int64_t(1));
    QCOMPARE(x.moreInits[1].matrix, Generator::Matrix::Lower);
    QCOMPARE(x.moreInits[1].diagonal, std::int64_t(-1));
    QCOMPARE(x.moreInits[1].shift, 3.0);
    QCOMPARE(x.moreInits[2].diagonal, std::int64_t(0));
    const auto j = kwb::taskToJson(t)["tensors"][0]["init"];
    QCOMPARE(j[0]["matrix"].get<std::string>(), std::string("symmetric"));
    QVERIFY(!j[0].contains("diagonal"));
    QCOMPARE(j[1]["matrix"].get<std::string>(), std::string("upper"));
    QCOMPARE(j[1]["diagonal"].get<int>(), 1);
    QCOMPARE(j[2]["diagonal"].get<int>(), -1);
    QCOMPARE(kwb::generatorExtrasText(x.init.value()), std::string("scale 0.5, symmetric"));
    QCOMPARE(kwb::generatorExtrasText(x.moreInits[1]), std::string("shift 3, lower (diagonal -1)"));
  }
  {
    // Symmetric over the last two of more dimensions, square in every configuration.
    PARSE(t, manifest({{3, "sizes = [\"rows\", \"cols\", \"b\"]"}, {7, "cols = 8\nb = 3"},
                       {10, "shape = [\"b\", \"cols\", \"cols\"]"},
                       {12, "init = { kind = \"uniform\", low = 0.0, high = 1.0, matrix = \"symmetric\" }"}},
                      "[[configs]]\nname = \"d\"\nrows = 2\ncols = 5\nb = 1"));
    QCOMPARE(t.tensors[0].init->matrix, Generator::Matrix::Symmetric);
  }
}

void TestManifestParser::moduleAndGeneratorErrors_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("expected");
  const QString stateRule = "the module's state-dict key, identifiers or numbers joined by '.', e.g. \"conv.weight\" or "
                            "\"layers.0.bias\"";
  // --- [tensors.X] state ---
  QTest::newRow("state on an output")
      << torchManifest("", "", {{17, "tolerance = { rtol = 1e-5, atol = 1e-6 }\nstate = \"fc.weight\""}})
      << "task.toml:18: tensors.y.state: not allowed for role 'out' (module state is an input the module reads: role "
         "'in'); expected no state";
  QTest::newRow("state on an inout tensor")
      << torchManifest("", "role = \"inout\"\ntolerance = \"exact\"\nstate = \"fc.weight\"", {})
             .replace("role = \"in\"\ninit = { kind = \"uniform\", low = -1.0, high = 1.0 }\nrole",
                      "init = { kind = \"uniform\", low = -1.0, high = 1.0 }\nrole")
      << "task.toml:40: tensors.w.state: not allowed for role 'inout' (module state is an input the module reads: role "
         "'in'); expected no state";
  QTest::newRow("state not a string") << torchManifest("", "state = 3")
                                      << "task.toml:39: tensors.w.state: found an integer; expected " + stateRule;
  for (const char *bad : {"", "conv..weight", "conv.weight.", ".bias", "conv-weight", "0w.x", "a b"})
    QTest::newRow(qPrintable(QString("state '%1'").arg(bad)))
        << torchManifest("", QString("state = \"%1\"").arg(bad))
        << QString("task.toml:39: tensors.w.state: '%1' is not a state-dict key; expected ").arg(bad) + stateRule;
  QTest::newRow("state twice")
      << torchManifest("", "state = \"fc.weight\"", {{11, "role = \"in\"\nstate = \"fc.weight\""}})
      << "task.toml:40: tensors.w.state: 'fc.weight' is also the state of tensor 'x'; expected each state-dict key once";
  QTest::newRow("state without a PyTorch reference")
      << manifest({{12, "init = { kind = \"uniform\", low = 0.0, high = 1.0 }\nstate = \"fc.weight\""}})
      << "task.toml:13: tensors.x.state: module state needs a PyTorch reference to load it into, and the task has none; "
         "expected [reference] python = \"MODULE.py\" (whose Model has the state-dict key 'fc.weight'), or no state";

  // --- [tensors.X] draw ---
  const QString drawRule = "the number of forward's random call it stands for (1 for the first torch.randn, "
                           "torch.rand, torch.randint, torch.normal or _like call forward makes)";
  QTest::newRow("draw on an output")
      << torchManifest("", "draw = 1", {{17, "tolerance = { rtol = 1e-5, atol = 1e-6 }\ndraw = 1"}})
      << "task.toml:18: tensors.y.draw: not allowed for role 'out' (a random draw is an input: role 'in'); expected no draw";
  QTest::newRow("draw 0") << torchManifest("", "draw = 0")
                          << "task.toml:39: tensors.w.draw: 0 is out of range; expected " + drawRule;
  QTest::newRow("draw not an integer") << torchManifest("", "draw = \"1\"")
                                       << "task.toml:39: tensors.w.draw: found a string; expected " + drawRule;
  QTest::newRow("draw with state") << torchManifest("", "state = \"h0\"\ndraw = 1")
                                   << "task.toml:40: tensors.w.draw: given with state; expected one of the two (module "
                                      "state is loaded, a draw is handed to forward's random call)";
  QTest::newRow("draw twice") << torchManifest("", "draw = 1", {{11, "role = \"in\"\ndraw = 1"}})
                              << "task.toml:40: tensors.w.draw: 1 is also the draw of tensor 'x'; expected each of "
                                 "forward's random calls once";
  QTest::newRow("draws with a gap")
      << torchManifest("", "draw = 2")
      << "task.toml:39: tensors.w.draw: 2 leaves out draw 1; expected forward's random calls numbered 1, 2, ... in "
         "order, each given by one tensor";
  QTest::newRow("forward names a draw")
      << torchManifest("forward = [\"x\", \"w\"]", "draw = 1")
      << "task.toml:23: reference.forward: tensor 'w' is forward's random draw 1, handed to that random call, not "
         "passed to forward; expected an in or inout tensor without state or draw (x)";
  QTest::newRow("draw without a PyTorch reference")
      << manifest({{12, "init = { kind = \"uniform\", low = 0.0, high = 1.0 }\ndraw = 1"}})
      << "task.toml:13: tensors.x.draw: a random draw is handed to a PyTorch module's forward, and the task has none; "
         "expected [reference] python = \"MODULE.py\" (whose forward draws random tensors), or no draw";

  // --- [reference] module_constants ---
  QTest::newRow("module_constants unknown name")
      << torchManifest("module_constants = [\"rows\", \"batch\"]", "")
      << "task.toml:23: reference.module_constants: unknown name 'batch'; expected a size (rows, cols) or an integer "
         "parameter";
  QTest::newRow("module_constants twice") << torchManifest("module_constants = [\"rows\", \"rows\"]", "")
                                          << "task.toml:23: reference.module_constants: 'rows' appears twice; expected "
                                             "each name once";
  QTest::newRow("module_constants a float parameter")
      << torchManifest("module_constants = [\"alpha\"]", "[params]\nalpha = 0.5")
      << "task.toml:23: reference.module_constants: unknown name 'alpha'; expected a size (rows, cols) or an integer "
         "parameter";

  // --- [reference] forward ---
  const QString params = "state = \"fc.weight\"\n[params]\nalpha = 0.5";
  const QString allowed = "expected an in or inout tensor without state or draw (x) or a parameter (alpha)";
  QTest::newRow("forward names module state")
      << torchManifest("forward = [\"x\", \"w\"]", params)
      << "task.toml:23: reference.forward: tensor 'w' is module state (state = \"fc.weight\"), loaded into the module, "
         "not passed to forward; " + allowed;
  QTest::newRow("forward names an unknown name") << torchManifest("forward = [\"x\", \"z\"]", params)
                                                 << "task.toml:23: reference.forward: unknown name 'z'; " + allowed;
  QTest::newRow("forward names a size") << torchManifest("forward = [\"x\", \"rows\"]", params)
                                        << "task.toml:23: reference.forward: unknown name 'rows'; " + allowed;
  QTest::newRow("forward names an output")
      << torchManifest("forward = [\"x\", \"y\"]", params)
      << "task.toml:23: reference.forward: tensor 'y' is an output (forward returns it); " + allowed;
  QTest::newRow("forward names a tensor twice")
      << torchManifest("forward = [\"x\", \"alpha\", \"x\"]", params)
      << "task.toml:23: reference.forward: 'x' appears twice; expected each name once";
  QTest::newRow("forward names a parameter twice")
      << torchManifest("forward = [\"alpha\", \"x\", \"alpha\"]", params)
      << "task.toml:23: reference.forward: 'alpha' appears twice; expected each name once";
  QTest::newRow("forward misses a tensor")
      << torchManifest("forward = [\"alpha\"]", params)
      << "task.toml:23: reference.forward: tensor 'x' is missing; expected every in and inout tensor without state "
         "or draw exactly once (x)";
  QTest::newRow("forward misses a tensor without state")
      << torchManifest("forward = [\"x\"]", "")
      << "task.toml:23: reference.forward: tensor 'w' is missing; expected every in and inout tensor without state "
         "or draw exactly once (x, w)";
  QTest::newRow("forward not an array")
      << torchManifest("forward = \"x\"", params)
      << "task.toml:23: reference.forward: found a string; expected an array of forward's arguments in order, tensor "
         "and parameter names, e.g. [\"x\", \"alpha\"]";
  QTest::newRow("forward entry not a string")
      << torchManifest("forward = [1]", params)
      << "task.toml:23: reference.forward: found an integer; expected a tensor or parameter name (a string)";
  QTest::newRow("forward without python")
      << manifest({{23, "args = [\"x\", \"y\", \"rows\", \"cols\"]\nforward = [\"x\"]"}})
      << "task.toml:24: reference.forward: given without reference.python; expected it only with a PyTorch module";
  QTest::newRow("init names an unknown name")
      << torchManifest("init = [\"cols\", \"beta\"]", params)
      << "task.toml:23: reference.init: unknown name 'beta'; expected a parameter ([params]: alpha) or a size (rows, cols)";
  QTest::newRow("init names a tensor")
      << torchManifest("init = [\"x\"]", params)
      << "task.toml:23: reference.init: unknown name 'x'; expected a parameter ([params]: alpha) or a size (rows, cols)";

  // --- generator scale, shift, matrix, diagonal ---
  const auto init = [](const QString &fields) { return manifest({{12, "init = { " + fields + " }"}}); };
  const auto intInit = [](const char *dtype, const QString &fields) {
    return manifest({{9, QString("dtype = \"%1\"").arg(dtype)}, {12, "init = { " + fields + " }"},
                     {14, QString("dtype = \"%1\"").arg(dtype)}, {17, "tolerance = \"exact\""}});
  };
  QTest::newRow("scale 0") << init("kind = \"uniform\", low = 0.0, high = 1.0, scale = 0.0")
                           << "task.toml:12: tensors.x.init.scale: found 0; expected a nonzero number (every value "
                              "would be the shift: use kind = \"constant\")";
  QTest::newRow("scale a string") << init("kind = \"uniform\", low = 0.0, high = 1.0, scale = \"2\"")
                                  << "task.toml:12: tensors.x.init.scale: found a string; expected a number";
  QTest::newRow("scale nan") << init("kind = \"uniform\", low = 0.0, high = 1.0, scale = nan")
                             << "task.toml:12: tensors.x.init.scale: found nan; expected a finite number";
  QTest::newRow("shift infinite") << init("kind = \"normal\", mean = 0.0, std = 1.0, shift = -inf")
                                  << "task.toml:12: tensors.x.init.shift: found -inf; expected a finite number";
  QTest::newRow("scale a fraction on an integer tensor")
      << intInit("i32", "kind = \"randint\", low = 0, high = 10, scale = 0.5")
      << "task.toml:12: tensors.x.init.scale: found a floating-point number; expected an integer (tensor 'x' is i32)";
  QTest::newRow("shift a fraction on a bool tensor")
      << intInit("bool", "kind = \"randint\", low = 0, high = 2, shift = 0.5")
      << "task.toml:12: tensors.x.init.shift: found a floating-point number; expected an integer (tensor 'x' is bool)";
  QTest::newRow("randint scaled beyond i8")
      << intInit("i8", "kind = \"randint\", low = 0, high = 100, scale = 2")
      << "task.toml:12: tensors.x.init: randint draws from [0, 99] (from 0 to 198 after scale 2 and shift 0), which "
         "does not fit i8; expected values in [-128, 127]";
  QTest::newRow("randint scaled by -1 below u8")
      << intInit("u8", "kind = \"randint\", low = 0, high = 100, scale = -1")
      << "task.toml:12: tensors.x.init: randint draws from [0, 99] (from 0 to -99 after scale -1 and shift 0), which "
         "does not fit u8; expected values in [0, 255]";
  QTest::newRow("randint shifted beyond bool")
      << intInit("bool", "kind = \"randint\", low = 0, high = 2, scale = 2, shift = -1")
      << "task.toml:12: tensors.x.init: randint draws from [0, 1] (from -1 to 1 after scale 2 and shift -1), which "
         "does not fit bool; expected values in [0, 1]";
  QTest::newRow("constant scaled beyond f16")
      << manifest({{9, "dtype = \"f16\""}, {12, "init = { kind = \"constant\", value = 1000.0, scale = 100.0 }"}})
      << "task.toml:12: tensors.x.init.value: found 1000 (100000 after scale 100 and shift 0), which does not fit f16; "
         "expected a value in [-65504, 65504]";
  QTest::newRow("uniform shifted beyond f16")
      << manifest({{9, "dtype = \"f16\""}, {12, "init = { kind = \"uniform\", low = 0.0, high = 1.0, shift = 65504.0 }"}})
      << "task.toml:12: tensors.x.init.high: found 1 (65505 after scale 1 and shift 65504), which does not fit f16; "
         "expected a value in [-65504, 65504]";
  QTest::newRow("normal std scaled beyond f16")
      << manifest({{9, "dtype = \"f16\""}, {12, "init = { kind = \"normal\", mean = 0.0, std = 1000.0, scale = -100.0 }"}})
      << "task.toml:12: tensors.x.init.std: found 1000 (100000 after scale -100 and shift 0), which does not fit f16; "
         "expected a standard deviation <= 65504";
  QTest::newRow("arange shifted below u8")
      << intInit("u8", "kind = \"arange\", start = 0, step = 1, shift = -1")
      << "task.toml:12: tensors.x.init.start: found 0 (-1 after scale 1 and shift -1), which does not fit u8; expected "
         "a value in [0, 255]";
  QTest::newRow("arange scaled beyond u8")
      << intInit("u8", "kind = \"arange\", start = 0, step = 1, scale = 10")
      << "task.toml:12: tensors.x.init: arange runs from 0 to 31 over 32 elements for configuration 'c' (from 0 to 310 "
         "after scale 10 and shift 0), which does not fit u8; expected values in [0, 255]";
  const QString structures = "expected \"symmetric\", \"upper\" or \"lower\" (a structure over the last two dimensions)";
  QTest::newRow("matrix unknown") << init("kind = \"uniform\", low = 0.0, high = 1.0, matrix = \"diagonal\"")
                                  << "task.toml:12: tensors.x.init.matrix: unknown matrix structure 'diagonal'; " + structures;
  QTest::newRow("matrix none") << init("kind = \"uniform\", low = 0.0, high = 1.0, matrix = \"none\"")
                               << "task.toml:12: tensors.x.init.matrix: unknown matrix structure 'none'; " + structures;
  QTest::newRow("matrix not a string") << init("kind = \"uniform\", low = 0.0, high = 1.0, matrix = 1")
                                       << "task.toml:12: tensors.x.init.matrix: found an integer; " + structures;
  QTest::newRow("matrix on a vector")
      << manifest({{10, "shape = [\"rows\"]"}, {12, "init = { kind = \"uniform\", low = 0.0, high = 1.0, matrix = \"upper\" }"}})
      << "task.toml:12: tensors.x.init.matrix: tensor 'x' has 1 dimension; expected a tensor of at least 2 (the "
         "structure is over the last two: rows, columns)";
  QTest::newRow("matrix on a scalar")
      << manifest({{10, "shape = []"}, {12, "init = { kind = \"constant\", value = 1.0, matrix = \"lower\" }"}})
      << "task.toml:12: tensors.x.init.matrix: tensor 'x' has 0 dimensions; expected a tensor of at least 2 (the "
         "structure is over the last two: rows, columns)";
  QTest::newRow("symmetric not square")
      << init("kind = \"uniform\", low = 0.0, high = 1.0, matrix = \"symmetric\"")
      << "task.toml:12: tensors.x.init.matrix: symmetric needs square matrices, but tensor 'x' is 4 x 8 in its last two "
         "dimensions for configuration 'c'; expected them equal in every configuration";
  QTest::newRow("symmetric not square in the second configuration")
      << manifest({{6, "rows = 8"}, {12, "init = [{ kind = \"normal\", mean = 0.0, std = 1.0 }, "
                                         "{ kind = \"uniform\", low = 0.0, high = 1.0, matrix = \"symmetric\" }]"}},
                  "[[configs]]\nname = \"wide\"\nrows = 2\ncols = 8")
      << "task.toml:12: tensors.x.init[1].matrix: symmetric needs square matrices, but tensor 'x' is 2 x 8 in its last "
         "two dimensions for configuration 'wide'; expected them equal in every configuration";
  QTest::newRow("diagonal without matrix")
      << init("kind = \"uniform\", low = 0.0, high = 1.0, diagonal = 1")
      << "task.toml:12: tensors.x.init.diagonal: given without matrix = \"upper\" or \"lower\"; expected it only with a "
         "triangular structure";
  QTest::newRow("diagonal with symmetric")
      << manifest({{10, "shape = [\"cols\", \"cols\"]"},
                   {12, "init = { kind = \"uniform\", low = 0.0, high = 1.0, matrix = \"symmetric\", diagonal = 0 }"}})
      << "task.toml:12: tensors.x.init.diagonal: given without matrix = \"upper\" or \"lower\"; expected it only with a "
         "triangular structure";
  QTest::newRow("diagonal not an integer")
      << init("kind = \"uniform\", low = 0.0, high = 1.0, matrix = \"upper\", diagonal = 0.5")
      << "task.toml:12: tensors.x.init.diagonal: found a floating-point number; expected an integer (0: the main "
         "diagonal, 1: the one above it, -1: below)";
}

void TestManifestParser::moduleAndGeneratorErrors() {
  QFETCH(QString, text);
  QFETCH(QString, expected);
  QCOMPARE(errorOf(text), expected);
}

void TestManifestParser::malformed_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("expected");

  const QString allRootKeys =
      "name, description, sizes, seeds, configs, tensors, reference, launch, tunables, cost, editor, allow_libraries, export, constraints, "
      "params";
  const QString launch = "[launch]\nkernel = \"k\"\ngrid = [\"rows\"]\nblock = [\"BLOCK\"]\nargs = [\"x\", \"y\"]";

  // --- the document and the root table ---
  QTest::newRow("syntax error")
      << manifest({{6, "rows = 4 4"}})
      << "task.toml:6: TOML syntax error: Error while parsing key-value pair: expected a comment or "
         "whitespace, saw '4'";
  QTest::newRow("syntax error: key defined twice")
      << manifest({{7, "rows = 8"}})
      << "task.toml:7: TOML syntax error: Error while parsing key-value pair: cannot redefine existing "
         "integer 'rows'";
  QTest::newRow("unknown top-level key") << manifest({{2, "descripton = \"d\""}})
                                         << "task.toml:2: descripton: unknown key; expected one of: " + allRootKeys;
  QTest::newRow("init: an empty list")
      << manifest({{12, "init = []"}})
      << "task.toml:12: tensors.x.init: an empty list; expected one generator or more, e.g. a generator like { kind = "
         "\"uniform\", low = -1.0, high = 1.0 }";
  QTest::newRow("init: a bad generator in the list")
      << manifest({{12, "init = [{ kind = \"uniform\", low = 0.0, high = 1.0 }, { kind = \"normal\", mean = 0.0, std = -1.0 }]"}})
      << "task.toml:12: tensors.x.init[1].std: found -1; expected a standard deviation > 0";
  QTest::newRow("allow_libraries: unknown library")
      << manifest({{2, "allow_libraries = [\"cublas\", \"mkl\"]\ndescription = \"d\""}})
      << "task.toml:2: allow_libraries: 'mkl' is not a known vendor library; expected one of: cublas, cublasLt, "
         "cudnn, cufft, cusparse, cusolver, curand, npp, nvjpeg, cutensor, torch, c10";
  QTest::newRow("allow_libraries: not an array") << manifest({{2, "allow_libraries = \"cublas\"\ndescription = \"d\""}})
      << "task.toml:2: allow_libraries: found a string; expected an array of vendor library names, e.g. "
         "[\"cublas\"]; known: cublas, cublasLt, cudnn, cufft, cusparse, cusolver, curand, npp, nvjpeg, cutensor, "
         "torch, c10";
  QTest::newRow("missing name") << manifest({{1, "# no name"}})
                                << "task.toml: name: missing; expected a task name, e.g. name = \"softmax\"";
  QTest::newRow("name not a string") << manifest({{1, "name = 3"}})
                                     << "task.toml:1: name: found an integer; expected a task name (a string)";
  QTest::newRow("name with a space")
      << manifest({{1, "name = \"soft max\""}})
      << "task.toml:1: name: 'soft max' is not a valid task name; expected letters, digits, '_' and '-' only";
  QTest::newRow("empty name") << manifest({{1, "name = \"\""}})
                              << "task.toml:1: name: empty; expected letters, digits, '_' and '-' only";
  QTest::newRow("missing description") << manifest({{2, ""}})
                                       << "task.toml: description: missing; expected a one-line description, "
                                          "e.g. description = \"Row-wise softmax\"";

  // --- sizes and seeds ---
  QTest::newRow("sizes empty") << manifest({{3, "sizes = []"}})
                               << "task.toml:3: sizes: empty; expected at least one size name, e.g. [\"rows\", \"cols\"]";
  QTest::newRow("sizes duplicate") << manifest({{3, "sizes = [\"rows\", \"rows\"]"}})
                                   << "task.toml:3: sizes: duplicate size 'rows'; expected each name once";
  QTest::newRow("size not an identifier")
      << manifest({{3, "sizes = [\"rows\", \"2cols\"]"}})
      << "task.toml:3: sizes: '2cols' is not a valid size name; expected an identifier (letters, digits and '_', not "
         "starting with a digit)";
  QTest::newRow("size called name") << manifest({{3, "sizes = [\"rows\", \"name\"]"}})
                                    << "task.toml:3: sizes: 'name' is reserved (a [[configs]] table uses "
                                       "it for the configuration's name); "
                                       "expected another size name";
  QTest::newRow("seeds empty")
      << manifest({{2, "description = \"d\"\nseeds = []"}})
      << "task.toml:3: seeds: empty; expected at least one seed, or no seeds key for the default [1, 2, 3]";
  QTest::newRow("seed negative") << manifest({{2, "description = \"d\"\nseeds = [1, -2]"}})
                                 << "task.toml:3: seeds: found -2; expected a non-negative integer";

  // --- configurations ---
  QTest::newRow("configs missing")
      << manifest({{4, ""}, {5, ""}, {6, ""}, {7, ""}})
      << "task.toml: configs: missing; expected at least one [[configs]] table setting rows, cols";
  QTest::newRow("configs is a table")
      << manifest({{4, "[configs]"}})
      << "task.toml:4: configs: found a table; expected at least one [[configs]] table setting rows, cols";
  QTest::newRow("config missing a size")
      << manifest({{7, ""}})
      << "task.toml:4: configs[0].cols: missing; expected a positive integer (every configuration sets rows, cols)";
  QTest::newRow("config with unknown key") << manifest({{7, "colz = 8"}})
                                           << "task.toml:7: configs[0].colz: unknown key; expected one of: name, rows, "
                                              "cols, launch, reference_launch";
  QTest::newRow("duplicate config name")
      << manifest({{7, "cols = 8\n[[configs]]\nname = \"c\"\nrows = 1\ncols = 1"}})
      << "task.toml:9: configs[1].name: duplicate configuration 'c'; expected unique names";
  QTest::newRow("config size zero") << manifest({{6, "rows = 0"}})
                                    << "task.toml:6: configs[0].rows: found 0; expected a positive integer";
  QTest::newRow("config size not an integer")
      << manifest({{6, "rows = 4.0"}})
      << "task.toml:6: configs[0].rows: found a floating-point number; expected a positive integer";

  // --- tensors ---
  QTest::newRow("tensors missing")
      << manifest({{8, ""},
                   {9, ""},
                   {10, ""},
                   {11, ""},
                   {12, ""},
                   {13, ""},
                   {14, ""},
                   {15, ""},
                   {16, ""},
                   {17, ""}})
      << "task.toml: tensors: missing; expected at least one [tensors.<name>] table";
  QTest::newRow("unknown tensor key")
      << manifest({{9, "dtpye = \"f32\""}})
      << "task.toml:9: tensors.x.dtpye: unknown key; expected one of: dtype, shape, role, init, tolerance, state, draw";
  QTest::newRow("bad dtype")
      << manifest({{9, "dtype = \"f31\""}})
      << "task.toml:9: tensors.x.dtype: unknown dtype 'f31'; expected one of: f64, f32, f16, bf16, i64, i32, i8, u8, "
         "bool";
  QTest::newRow("unknown size in shape") << manifest({{15, "shape = [\"rows\", \"cols2\"]"}})
                                         << "task.toml:15: tensors.y.shape: unknown size 'cols2'; known sizes: rows, "
                                            "cols";
  QTest::newRow("bad shape expression") << manifest({{10, "shape = [\"rows *\", \"cols\"]"}})
                                        << "task.toml:10: tensors.x.shape: invalid expression 'rows *': "
                                           "unexpected end of expression at character 7 of the expression; "
                                           "expected a number, a name, '(' or '-'";
  QTest::newRow("negative dimension")
      << manifest({{10, "shape = [\"rows - 5\"]"}})
      << "task.toml:10: tensors.x.shape: 'rows - 5' evaluates to -1 for configuration 'c'; expected a dimension >= 0";
  QTest::newRow("float dimension")
      << manifest({{10, "shape = [2.5]"}})
      << "task.toml:10: tensors.x.shape: found a floating-point number; expected an integer or an expression string "
         "like \"2 * rows\"";
  QTest::newRow("tensor too large")
      << manifest({{6, "rows = 4611686018427387904"}, {10, "shape = [\"rows\"]"}})
      << "task.toml:10: tensors.x.shape: the tensor's size in bytes overflows 64 bits for configuration 'c'; expected "
         "smaller dimensions";
  QTest::newRow("bad role") << manifest({{11, "role = \"input\""}})
                            << "task.toml:11: tensors.x.role: unknown role 'input'; expected one of: in, out, inout";
  QTest::newRow("tensor name clashes with a size")
      << manifest({{13, "[tensors.rows]"}})
      << "task.toml:13: tensors.rows: clashes with the size 'rows'; expected a name that is not a size (rows, cols)";
  QTest::newRow("no output tensor")
      << manifest({{16, "role = \"in\""}, {17, "init = { kind = \"constant\", value = 0 }"}})
      << "task.toml:8: tensors: no output tensor; expected at least one tensor with role 'out' or 'inout'";

  // --- generators ---
  QTest::newRow("missing init for input")
      << manifest({{12, ""}})
      << "task.toml:8: tensors.x.init: missing for role 'in'; expected a generator like { kind = \"uniform\", low = "
         "-1.0, high = 1.0 }";
  QTest::newRow("init on output")
      << manifest({{16, "role = \"out\"\ninit = { kind = \"constant\", value = 0 }"}})
      << "task.toml:17: tensors.y.init: not allowed for role 'out' (outputs are written by the kernel); expected no "
         "init";
  QTest::newRow("bad generator kind")
      << manifest({{12, "init = { kind = \"gauss\" }"}})
      << "task.toml:12: tensors.x.init.kind: unknown generator 'gauss'; expected one of: uniform, normal, randint, "
         "arange, constant";
  QTest::newRow("uniform low >= high") << manifest({{12, "init = { kind = \"uniform\", low = 1.0, high = 1 }"}})
                                       << "task.toml:12: tensors.x.init.high: found low = 1, high = 1; expected low "
                                          "< high";
  QTest::newRow("uniform missing high")
      << manifest({{12, "init = { kind = \"uniform\", low = 0.0 }"}})
      << "task.toml:12: tensors.x.init.high: missing; expected a number (uniform needs low and high)";
  QTest::newRow("unknown generator parameter")
      << manifest({{12, "init = { kind = \"normal\", mean = 0.0, sigma = 1.0 }"}})
      << "task.toml:12: tensors.x.init.sigma: unknown key; expected one of: kind, mean, std, seed_offset, scale, shift, matrix, diagonal";
  QTest::newRow("normal std zero") << manifest({{12, "init = { kind = \"normal\", mean = 0.0, std = 0.0 }"}})
                                   << "task.toml:12: tensors.x.init.std: found 0; expected a standard deviation > 0";
  QTest::newRow("uniform on an integer tensor")
      << manifest({{9, "dtype = \"i32\""}})
      << "task.toml:12: tensors.x.init.kind: 'uniform' draws real numbers but tensor 'x' is i32; expected randint, "
         "arange or constant";
  QTest::newRow("randint with a float bound")
      << manifest({{12, "init = { kind = \"randint\", low = 0.5, high = 4 }"}})
      << "task.toml:12: tensors.x.init.low: found a floating-point number; expected an integer";
  QTest::newRow("randint beyond u8")
      << manifest({{9, "dtype = \"u8\""}, {12, "init = { kind = \"randint\", low = -1, high = 10 }"}})
      << "task.toml:12: tensors.x.init: randint draws from [-1, 9], which does not fit u8; expected values in [0, 255]";
  QTest::newRow("fractional constant for an integer tensor")
      << manifest({{9, "dtype = \"i8\""}, {12, "init = { kind = \"constant\", value = 0.5 }"}})
      << "task.toml:12: tensors.x.init.value: found a floating-point number; expected an integer (tensor 'x' is i8)";
  QTest::newRow("negative seed_offset")
      << manifest({{12, "init = { kind = \"uniform\", low = 0.0, high = 1.0, seed_offset = -1 }"}})
      << "task.toml:12: tensors.x.init.seed_offset: found -1; expected a non-negative integer";
  QTest::newRow("arange beyond u8") << manifest({{9, "dtype = \"u8\""},
                                                 {12, "init = { kind = \"arange\", start = 0, step = 10 }"}})
                                    << "task.toml:12: tensors.x.init: arange runs from 0 to 310 over 32 "
                                       "elements for configuration 'c', which does "
                                       "not fit u8; expected values in [0, 255]";
  QTest::newRow("arange beyond u8 in a later configuration")
      << manifest({{7, "cols = 8\n[[configs]]\nname = \"big\"\nrows = 100\ncols = 8"},
                   {9, "dtype = \"u8\""},
                   {12, "init = { kind = \"arange\", start = 0, step = 1 }"}})
      << "task.toml:16: tensors.x.init: arange runs from 0 to 799 over 800 elements for configuration 'big', "
         "which "
         "does not fit u8; expected values in [0, 255]";
  QTest::newRow("arange on bool") << manifest({{9, "dtype = \"bool\""},
                                               {12, "init = { kind = \"arange\", start = 0, step = 1 }"}})
                                  << "task.toml:12: tensors.x.init: arange runs from 0 to 31 over 32 "
                                     "elements for configuration 'c', which does "
                                     "not fit bool; expected values in [0, 1]";
  QTest::newRow("arange downwards beyond i32")
      << manifest(
             {{9, "dtype = \"i32\""}, {12, "init = { kind = \"arange\", start = 0, step = -100000000 }"}})
      << "task.toml:12: tensors.x.init: arange runs from 0 to -3100000000 over 32 elements for configuration "
         "'c', "
         "which does not fit i32; expected values in [-2147483648, 2147483647]";
  QTest::newRow("arange beyond i64 (64-bit overflow)")
      << manifest({{6, "rows = 4000000000000"},
                   {9, "dtype = \"i64\""},
                   {12, "init = { kind = \"arange\", start = 1, step = 9007199254740992 }"}})
      << "task.toml:12: tensors.x.init: arange runs from 1 to 2.8823037615170274e+29 over 32000000000000 "
         "elements "
         "for configuration 'c', which does not fit i64; expected values in [-9007199254740992, "
         "9007199254740992]";
  QTest::newRow("arange start beyond i8")
      << manifest({{9, "dtype = \"i8\""}, {12, "init = { kind = \"arange\", start = 200, step = 1 }"}})
      << "task.toml:12: tensors.x.init.start: found 200, which does not fit i8; expected a value in [-128, "
         "127]";
  QTest::newRow("arange beyond f16")
      << manifest({{9, "dtype = \"f16\""}, {12, "init = { kind = \"arange\", start = 65500, step = 1 }"}})
      << "task.toml:12: tensors.x.init: arange runs from 65500 to 65531 over 32 elements for configuration "
         "'c', "
         "which does not fit f16; expected values in [-65504, 65504]";
  QTest::newRow("uniform beyond f16")
      << manifest({{9, "dtype = \"f16\""}, {12, "init = { kind = \"uniform\", low = 0, high = 70000.0 }"}})
      << "task.toml:12: tensors.x.init.high: found 70000, which does not fit f16; expected a value in "
         "[-65504, 65504]";
  QTest::newRow("constant beyond bf16")
      << manifest({{9, "dtype = \"bf16\""}, {12, "init = { kind = \"constant\", value = -1e39 }"}})
      << "task.toml:12: tensors.x.init.value: found -1e+39, which does not fit bf16; expected a value in "
         "[-3.3895313892515355e+38, 3.3895313892515355e+38]";
  QTest::newRow("normal mean beyond f32")
      << manifest({{12, "init = { kind = \"normal\", mean = 1e39, std = 1 }"}})
      << "task.toml:12: tensors.x.init.mean: found 1e+39, which does not fit f32; expected a value in "
         "[-3.4028234663852886e+38, 3.4028234663852886e+38]";
  QTest::newRow("normal std beyond f32")
      << manifest({{12, "init = { kind = \"normal\", mean = 0, std = 1e39 }"}})
      << "task.toml:12: tensors.x.init.std: found 1e+39, which does not fit f32; expected a standard "
         "deviation <= "
         "3.4028234663852886e+38";
  QTest::newRow("randint beyond f16")
      << manifest({{9, "dtype = \"f16\""}, {12, "init = { kind = \"randint\", low = 0, high = 70000 }"}})
      << "task.toml:12: tensors.x.init: randint draws from [0, 69999], which does not fit f16; expected "
         "values in "
         "[-65504, 65504]";
  QTest::newRow("non-finite parameter") << manifest({{12, "init = { kind = \"constant\", value = nan }"}})
                                        << "task.toml:12: tensors.x.init.value: found nan; expected a finite number";

  // --- tolerances ---
  QTest::newRow("tolerance missing on output")
      << manifest({{17, ""}})
      << "task.toml:13: tensors.y.tolerance: missing for role 'out'; expected \"exact\" or a table like { rtol = 1e-5, "
         "atol = 1e-7 }";
  QTest::newRow("tolerance missing on integer output")
      << manifest({{14, "dtype = \"i32\""}, {17, ""}})
      << "task.toml:13: tensors.y.tolerance: missing for role 'out'; expected \"exact\" (i32 outputs are compared "
         "exactly)";
  QTest::newRow("rtol negative") << manifest({{17, "tolerance = { rtol = -1e-5 }"}})
                                 << "task.toml:17: tensors.y.tolerance.rtol: found -1e-05; expected a number >= 0";
  QTest::newRow("integer output with rtol")
      << manifest({{14, "dtype = \"i32\""}})
      << "task.toml:17: tensors.y.tolerance: i32 outputs are compared exactly; expected \"exact\"";
  QTest::newRow("bool output with atol")
      << manifest({{14, "dtype = \"bool\""}, {17, "tolerance = { atol = 0.5 }"}})
      << "task.toml:17: tensors.y.tolerance: bool outputs are compared exactly; expected \"exact\"";
  QTest::newRow("tolerance misspelled")
      << manifest({{17, "tolerance = \"exakt\""}})
      << "task.toml:17: tensors.y.tolerance: found 'exakt'; expected \"exact\" or a table like { rtol = 1e-5, atol = "
         "1e-7 }";
  QTest::newRow("tolerance empty")
      << manifest({{17, "tolerance = {}"}})
      << "task.toml:17: tensors.y.tolerance: empty; expected rtol, atol or both, e.g. { rtol = 1e-5, atol = 1e-7 }";
  QTest::newRow("constraint without a comparison") << manifest({{3, "sizes = [\"rows\", \"cols\"]\nconstraints = [\"rows % 4\"]"}})
                                                  << "task.toml:4: constraints: invalid constraint 'rows % 4': no comparison; "
                                                     "expected two expressions compared with ==, !=, <, <=, > or >=, e.g. "
                                                     "\"N % 128 == 0\"";
  QTest::newRow("constraint with two comparisons")
      << manifest({{3, "sizes = [\"rows\", \"cols\"]\nconstraints = [\"1 < rows < 9\"]"}})
      << "task.toml:4: constraints: invalid constraint '1 < rows < 9': a second comparison at character 10; expected one "
         "comparison, e.g. \"N % 128 == 0\" (write two constraints for two)";
  QTest::newRow("constraint unknown name") << manifest({{3, "sizes = [\"rows\", \"cols\"]\nconstraints = [\"n <= 4\"]"}})
                                           << "task.toml:4: constraints: unknown name 'n' in 'n <= 4'; known sizes: rows, cols";
  QTest::newRow("configuration breaks a constraint")
      << manifest({{3, "sizes = [\"rows\", \"cols\"]\nconstraints = [\"cols % 16 == 0\"]"}})
      << "task.toml:4: constraints: configuration 'c' breaks it: constraint 'cols % 16 == 0' does not hold (cols % 16 = 8, 0 "
         "= 0); expected every configuration (with the tunables' first values) to meet every constraint";
  // --- parameters, a configuration's own launch, a PyTorch reference (issue 21) ---
  QTest::newRow("param clashes with a size") << manifest({}, "[params]\nrows = 3")
                                             << "task.toml:28: params.rows: clashes with the size 'rows'; expected a name of its own";
  QTest::newRow("param not a number")
      << manifest({}, "[params]\neps = \"small\"")
      << "task.toml:28: params.eps: found a string; expected a number (an integer: i64; a real: f32), a boolean, or "
         "{ value = ..., dtype = \"i64\"|\"i32\"|\"f32\"|\"f64\" }";
  QTest::newRow("param real with an integer dtype")
      << manifest({}, "[params]\neps = { value = 1.5, dtype = \"i32\" }")
      << "task.toml:28: params.eps: found 1.5 for an integer dtype; expected an integer";
  QTest::newRow("param unknown dtype") << manifest({}, "[params]\neps = { value = 1.5, dtype = \"f16\" }")
                                       << "task.toml:28: params.eps.dtype: found 'f16'; expected \"i64\", \"i32\", \"f32\" or \"f64\"";
  QTest::newRow("param i32 out of range") << manifest({}, "[params]\nk = { value = 4294967296, dtype = \"i32\" }")
                                          << "task.toml:28: params.k: found 4294967296; expected a value an i32 holds";
  QTest::newRow("real param in a shape")
      << manifest({{15, "shape = [\"rows\", \"eps\"]"}}, "[params]\neps = 1e-5")
      << "task.toml:15: tensors.y.shape: parameter 'eps' is not an integer; expected sizes and integer parameters only";
  QTest::newRow("launch arg unknown, parameters named")
      << manifest({{23, "args = [\"x\", \"y\", \"rows\", \"epsilon\"]"}}, "[params]\neps = 1e-5")
      << "task.toml:23: reference.args: unknown name 'epsilon'; expected a tensor (x, y) or a size (rows, cols) or a "
         "parameter (eps)";
  QTest::newRow("configuration launch unknown key")
      << manifest({{7, "cols = 8\nlaunch = { kernal = \"k2\" }"}})
      << "task.toml:8: configs[0].launch.kernal: unknown key; expected one of: kernel, grid, block, shared_bytes, args";
  QTest::newRow("configuration launch block too large")
      << manifest({{7, "cols = 8\nlaunch = { block = [2048] }"}})
      << "task.toml:8: configs[0].launch.block: found 2048; expected block x <= 1024";
  QTest::newRow("configuration launch not a table") << manifest({{7, "cols = 8\nlaunch = 3"}})
                                                    << "task.toml:8: configs[0].launch: found an integer; expected an inline "
                                                       "table of the launch fields that differ for this configuration, e.g. "
                                                       "{ kernel = \"split\", grid = [\"rows * 64\"] }";
  QTest::newRow("size called launch")
      << manifest({{3, "sizes = [\"rows\", \"launch\"]"}})
      << "task.toml:3: sizes: 'launch' is reserved (a [[configs]] table uses it for the configuration's own launch); "
         "expected another size name";
  QTest::newRow("reference init without python")
      << manifest({{23, "args = [\"x\", \"y\", \"rows\", \"cols\"]\ninit = [\"dim\"]"}})
      << "task.toml:24: reference.init: given without reference.python; expected it only with a PyTorch module";
  QTest::newRow("python reference without a launch")
      << manifest({{19, "python = \"ref.py\""}, {20, ""}, {21, ""}, {22, ""}, {23, ""}})
      << "task.toml: launch: missing; expected a [launch] table saying how a candidate is launched (kernel, grid, block, "
         "args): the reference is a PyTorch module, which launches nothing";
  QTest::newRow("python reference with a kernel but no source")
      << manifest({{19, "python = \"ref.py\""}})
      << "task.toml:20: reference.kernel: given without reference.source; expected the CUDA source its kernel is in, or "
         "none of kernel, grid, block, shared_bytes and args for a PyTorch-only reference";
  QTest::newRow("python reference init names no parameter")
      << manifest({{19, "python = \"ref.py\"\ninit = [\"dim\"]"}, {20, ""}, {21, ""}, {22, ""}, {23, ""}})
      << "task.toml:20: reference.init: unknown name 'dim'; expected a parameter ([params]: there are none) or a size (rows, "
         "cols)";
  QTest::newRow("python reference without a starter")
      << manifest({{19, "python = \"ref.py\""}, {20, ""}, {21, ""}, {22, ""}, {23, ""}},
                  "[launch]\nkernel = \"k\"\ngrid = [\"rows\"]\nblock = [32]\nargs = [\"x\", \"y\"]")
      << "task.toml: editor.starter: missing; expected [editor] starter = \"FILE.cu\": the reference is a PyTorch module, "
         "so a user needs a CUDA source to start editing from";
  QTest::newRow("export unknown key") << manifest({}, "[export]\npytorch = \"x\"")
                                      << "task.toml:28: export.pytorch: unknown key; expected torch";
  QTest::newRow("export torch not a string") << manifest({}, "[export]\ntorch = 3")
                                             << "task.toml:28: export.torch: found an integer; expected the PyTorch operation the "
                                                "kernel replaces, a Python expression over the tensors and sizes, e.g. "
                                                "\"torch.softmax(x, dim=1)\"";
  QTest::newRow("export torch empty") << manifest({}, "[export]\ntorch = \"\"")
                                      << "task.toml:28: export.torch: expected the PyTorch operation the kernel replaces, a "
                                         "Python expression over the tensors and sizes, e.g. \"torch.softmax(x, dim=1)\" on "
                                         "one line, at most 1000 characters";
  QTest::newRow("tolerance unknown key") << manifest({{17, "tolerance = { rtol = 1e-5, abs = 1e-6 }"}})
                                         << "task.toml:17: tensors.y.tolerance.abs: unknown key; expected one of: "
                                            "rtol, atol";
  QTest::newRow("tolerance on input")
      << manifest({{12, "init = { kind = \"uniform\", low = 0.0, high = 1.0 }\ntolerance = \"exact\""}})
      << "task.toml:13: tensors.x.tolerance: not allowed for role 'in' (inputs are not compared); expected no "
         "tolerance";

  // --- reference ---
  QTest::newRow("reference missing") << manifest({{18, ""}, {19, ""}, {20, ""}, {21, ""}, {22, ""}, {23, ""}})
                                     << "task.toml: reference: missing; expected a [reference] table with "
                                        "source, kernel, grid, block and args (a CUDA reference), or python (a "
                                        "PyTorch module)";
  QTest::newRow("reference unknown key")
      << manifest({{20, "kernal = \"ref\""}})
      << "task.toml:20: reference.kernal: unknown key; expected one of: source, python, init, forward, module_constants, kernel, grid, "
         "block, shared_bytes, args";
  QTest::newRow("reference kernel missing")
      << manifest({{20, ""}})
      << "task.toml:18: reference.kernel: missing; expected the kernel function's name, e.g. kernel = \"softmax\"";
  QTest::newRow("reference kernel not an identifier")
      << manifest({{20, "kernel = \"ref-kernel\""}})
      << "task.toml:20: reference.kernel: 'ref-kernel' is not a valid kernel name; expected an identifier (letters, "
         "digits and '_', not starting with a digit)";
  QTest::newRow("reference source absolute")
      << manifest({{19, "source = \"/tmp/ref.cu\""}})
      << "task.toml:19: reference.source: '/tmp/ref.cu' is an absolute path; expected a path relative to the task "
         "folder";
  QTest::newRow("reference source outside the folder")
      << manifest({{19, "source = \"../ref.cu\""}})
      << "task.toml:19: reference.source: '../ref.cu' leaves the task folder; expected a path that stays "
         "inside the "
         "task folder";
  QTest::newRow("reference source leaving through a subfolder")
      << manifest({{19, "source = \"src/../../other/ref.cu\""}})
      << "task.toml:19: reference.source: 'src/../../other/ref.cu' leaves the task folder; expected a path "
         "that stays "
         "inside the task folder";
  QTest::newRow("reference source naming the folder")
      << manifest({{19, "source = \"src/..\""}})
      << "task.toml:19: reference.source: 'src/..' is not a file; expected the reference source file";
  QTest::newRow("starter outside the folder") << manifest({}, "[editor]\nstarter = \"../softmax/softmax.cu\"")
                                              << "task.toml:28: editor.starter: '../softmax/softmax.cu' "
                                                 "leaves the task folder; expected a path that stays "
                                                 "inside the task folder";
  QTest::newRow("args unknown name")
      << manifest({{23, "args = [\"x\", \"y\", \"rows\", \"z\"]"}})
      << "task.toml:23: reference.args: unknown name 'z'; expected a tensor (x, y) or a size (rows, cols)";
  QTest::newRow("tensor missing in args")
      << manifest({{23, "args = [\"x\", \"rows\", \"cols\"]"}})
      << "task.toml:23: reference.args: tensor 'y' is missing; expected every tensor exactly once (x, y)";
  QTest::newRow("tensor twice in args")
      << manifest({{23, "args = [\"x\", \"y\", \"x\"]"}})
      << "task.toml:23: reference.args: tensor 'x' appears twice; expected each tensor exactly once";
  QTest::newRow("grid with 4 dimensions")
      << manifest({{21, "grid = [\"rows\", 1, 1, 1]"}})
      << "task.toml:21: reference.grid: found 4 dimensions; expected 1 to 3 dimensions (x, y, z)";
  QTest::newRow("block with no dimension") << manifest({{22, "block = []"}})
                                           << "task.toml:22: reference.block: found 0 dimensions; expected 1 to 3 "
                                              "dimensions (x, y, z)";
  QTest::newRow("grid evaluating to 0")
      << manifest({{21, "grid = [\"rows - 4\"]"}})
      << "task.toml:21: reference.grid: 'rows - 4' evaluates to 0 for configuration 'c'; expected grid x >= 1";
  QTest::newRow("block of zero threads") << manifest({{22, "block = [0]"}})
                                         << "task.toml:22: reference.block: found 0; expected block x >= 1";
  QTest::newRow("grid y beyond the CUDA limit")
      << manifest({{21, "grid = [1, \"rows * 20000\"]"}})
      << "task.toml:21: reference.grid: 'rows * 20000' evaluates to 80000 for configuration 'c'; expected grid y <= "
         "65535";
  QTest::newRow("block with too many threads")
      << manifest({{22, "block = [64, 32]"}})
      << "task.toml:22: reference.block: 64 x 32 = 2048 threads per block for configuration 'c'; expected at most 1024";
  QTest::newRow("negative shared memory")
      << manifest({{22, "block = [32]\nshared_bytes = \"-rows\""}})
      << "task.toml:23: reference.shared_bytes: '-rows' evaluates to -4 for configuration 'c'; expected a byte count "
         ">= 0";
  QTest::newRow("shared memory beyond the launch API")
      << manifest({{22, "block = [32]\nshared_bytes = 9223372036854775807"}})
      << "task.toml:23: reference.shared_bytes: found 9223372036854775807; expected a byte count <= 4294967295";
  QTest::newRow("reference uses a tunable")
      << manifest({{21, "grid = [\"BLOCK\"]"}}, "[tunables]\nBLOCK = [128]")
      << "task.toml:21: reference.grid: tunable 'BLOCK' cannot be used here; expected sizes only: rows, cols";
  QTest::newRow("tunable in args")
      << manifest({{23, "args = [\"x\", \"y\", \"BLOCK\"]"}}, "[tunables]\nBLOCK = [128]")
      << "task.toml:23: reference.args: 'BLOCK' is a tunable (compiled in as -DBLOCK=...); expected a tensor (x, y) "
         "or a size (rows, cols)";

  // --- launch and tunables ---
  QTest::newRow("tunable clashing with a size")
      << manifest({}, "[tunables]\nrows = [1, 2]")
      << "task.toml:28: tunables.rows: clashes with the size 'rows'; expected a name that is not a size (rows, cols)";
  QTest::newRow("tunable clashing with a tensor")
      << manifest({}, "[tunables]\nx = [32, 64]")
      << "task.toml:28: tunables.x: clashes with the tensor 'x'; expected a name that is not a tensor (x, y)";
  QTest::newRow("empty tunable values") << manifest({}, "[tunables]\nBLOCK = []")
                                        << "task.toml:28: tunables.BLOCK: empty; expected at least one value, e.g. "
                                           "[128, 256]";
  QTest::newRow("duplicate tunable values")
      << manifest({}, "[tunables]\nBLOCK = [128, 256, 128]")
      << "task.toml:28: tunables.BLOCK: duplicate value 128; expected each value once";
  QTest::newRow("tunable not an array")
      << manifest({}, "[tunables]\nBLOCK = 128")
      << "task.toml:28: tunables.BLOCK: found an integer; expected a non-empty array of integers, e.g. [128, 256]";
  QTest::newRow("launch unknown name")
      << manifest({}, QString(launch).replace("[\"BLOCK\"]", "[\"BLK\"]") + "\n[tunables]\nBLOCK = [128, 256]")
      << "task.toml:30: launch.block: unknown name 'BLK'; known sizes: rows, cols; known tunables: BLOCK";
  QTest::newRow("launch source not allowed")
      << manifest({}, "[launch]\nsource = \"k.cu\"")
      << "task.toml:28: launch.source: unknown key; expected one of: kernel, grid, block, shared_bytes, args";
  QTest::newRow("launch fails for one tunable combination")
      << manifest({}, QString(launch).replace("[\"BLOCK\"]", "[\"BLOCK\", \"TILE\"]") +
                          "\n[tunables]\nBLOCK = [32, 64]\nTILE = [16, 32]")
      << "task.toml:30: launch.block: 64 x 32 = 2048 threads per block for configuration 'c' with BLOCK=64, TILE=32; "
         "expected at most 1024";
  QTest::newRow("launch grid zero for a tunable value")
      << manifest({}, QString(launch).replace("[\"rows\"]", "[\"ceil_div(rows, BLOCK) - 1\"]") +
                          "\n[tunables]\nBLOCK = [2, 4]")
      << "task.toml:29: launch.grid: 'ceil_div(rows, BLOCK) - 1' evaluates to 0 for configuration 'c' with BLOCK=4; "
         "expected grid x >= 1";

  {
    // 2 x 3000 = 6000 combinations in all, but the launch uses only A: both of its values are checked.
    QStringList many;
    for (int i = 1; i <= 3000; ++i) many << QString::number(i);
    QTest::newRow("launch checks every value of the tunables it uses")
        << manifest({}, QString(launch).replace("[\"BLOCK\"]", "[\"A\"]") +
                            "\n[tunables]\nA = [1, 2000]\nB = [" + many.join(", ") + "]")
        << "task.toml:30: launch.block: 'A' evaluates to 2000 for configuration 'c' with A=2000; expected "
           "block x <= "
           "1024";
  }

  // --- cost and editor ---
  QTest::newRow("cost missing") << manifest({{24, ""}, {25, ""}, {26, ""}})
                                << "task.toml: cost: missing; expected a [cost] table with flops and bytes";
  QTest::newRow("cost bytes missing")
      << manifest({{26, ""}})
      << "task.toml:24: cost.bytes: missing; expected the bytes moved over the sizes, e.g. bytes = \"4 * (M * K + K * "
         "N + M * N)\"";
  QTest::newRow("cost unknown size") << manifest({{25, "flops = \"rows * depth\""}})
                                     << "task.toml:25: cost.flops: unknown size 'depth'; known sizes: rows, cols";
  QTest::newRow("cost bad expression syntax")
      << manifest({{25, "flops = \"rows cols\""}})
      << "task.toml:25: cost.flops: invalid expression 'rows cols': unexpected 'cols' at character 6 of the "
         "expression; expected an "
         "operator (+ - * / %) or the end of the expression";
  QTest::newRow("division by zero in cost") << manifest({{25, "flops = \"rows / (cols - 8)\""}})
                                            << "task.toml:25: cost.flops: division by zero at character 6 of "
                                               "the expression in 'rows / (cols - 8)' for configuration 'c'";
  QTest::newRow("overflow in cost") << manifest({{26, "bytes = \"rows * 4611686018427387904\""}})
                                    << "task.toml:26: cost.bytes: 64-bit integer overflow at character 6 of "
                                       "the expression in 'rows * 4611686018427387904' for "
                                       "configuration 'c'";
  QTest::newRow("negative cost") << manifest({{25, "flops = \"rows - 2 * cols\""}})
                                 << "task.toml:25: cost.flops: 'rows - 2 * cols' evaluates to -12 for configuration "
                                    "'c'; expected a count >= 0";
  QTest::newRow("cost expression too long")
      << manifest({{25, "flops = \"" + QString("1+").repeated(600) + "1\""}})
      << "task.toml:25: cost.flops: invalid expression '" + QString("1+").repeated(30) +
             "...': expression is 1201 characters long; expected at most 1024";
  QTest::newRow("cost nested too deep")
      << manifest(
             {{25, "flops = \"" + QString("(").repeated(65) + "rows" + QString(")").repeated(65) + "\""}})
      << "task.toml:25: cost.flops: invalid expression '" + QString("(").repeated(60) +
             "...': more than 64 nested parentheses at character 65 of the expression; expected at most 64 "
             "levels of "
             "parentheses and function calls";
  QTest::newRow("editor unknown key") << manifest({}, "[editor]\nstart = \"a.cu\"")
                                      << "task.toml:28: editor.start: unknown key; expected starter";
}

void TestManifestParser::malformed() {
  QFETCH(QString, text);
  QFETCH(QString, expected);
  QCOMPARE(errorOf(text), expected);
}

void TestManifestParser::sourceFiles_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QStringList>("files");
  QTest::addColumn<QString>("expected");

  QTest::newRow("reference source missing")
      << manifest() << QStringList{"other.cu"}
      << "task.toml:19: reference.source: 'ref.cu' does not exist in the task folder; expected the reference source "
         "file";
  QTest::newRow("reference source is a folder")
      << manifest({{19, "source = \"sub\""}}) << QStringList{"sub/inner.cu"}
      << "task.toml:19: reference.source: 'sub' is not a file; expected the reference source file";
  QTest::newRow("starter missing")
      << manifest({}, "[editor]\nstarter = \"start.cu\"") << QStringList{"ref.cu"}
      << "task.toml:28: editor.starter: 'start.cu' does not exist in the task folder; expected the source a user "
         "starts editing from";
  QTest::newRow("all present") << manifest({}, "[editor]\nstarter = \"start.cu\"")
                               << QStringList{"ref.cu", "start.cu"} << "(parsed without error)";
  QTest::newRow("source in a subfolder") << manifest({{19, "source = \"src/ref.cu\""}})
                                         << QStringList{"src/ref.cu"} << "(parsed without error)";
}

void TestManifestParser::sourceFiles() {
  QFETCH(QString, text);
  QFETCH(QStringList, files);
  QFETCH(QString, expected);
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  for (const QString &file : files) {
    QVERIFY(QDir(dir.path()).mkpath(QFileInfo(dir.filePath(file)).path()));
    writeFile(dir.filePath(file), "// source\n");
  }
  QCOMPARE(errorOf(text, dir.path().toStdString()), expected);
}

void TestManifestParser::errorParts() {
  try {
    parseManifest(manifest({{15, "shape = [\"rows\", \"cols2\"]"}}).toStdString(), "kernels/softmax/task.toml", {});
    QFAIL("no error");
  } catch (const ManifestError &e) {
    QCOMPARE(e.file(), std::string("kernels/softmax/task.toml"));
    QCOMPARE(e.line(), 15);
    QCOMPARE(e.field(), std::string("tensors.y.shape"));
    QCOMPARE(e.detail(), std::string("unknown size 'cols2'; known sizes: rows, cols"));
    QCOMPARE(std::string(e.what()),
             std::string("kernels/softmax/task.toml:15: tensors.y.shape: unknown size 'cols2'; known sizes: rows, cols"));
  }
  const ManifestError noLine("a/b", 0, "", "no task.toml in this folder");
  QCOMPARE(std::string(noLine.what()), std::string("a/b: no task.toml in this folder"));

  // A missing top-level key has no line: line 0, and no ":0" in the message.
  try {
    parseManifest(manifest({{24, ""}, {25, ""}, {26, ""}}).toStdString(), "task.toml", {});
    QFAIL("no error");
  } catch (const ManifestError &e) {
    QCOMPARE(e.line(), 0);
    QCOMPARE(e.field(), std::string("cost"));
    QCOMPARE(std::string(e.what()),
             std::string("task.toml: cost: missing; expected a [cost] table with flops and bytes"));
  }
  // A TOML syntax error has a line but no field.
  try {
    parseManifest(manifest({{6, "rows = 4 4"}}).toStdString(), "task.toml", {});
    QFAIL("no error");
  } catch (const ManifestError &e) {
    QCOMPARE(e.line(), 6);
    QCOMPARE(e.field(), std::string());
    QVERIFY(QString(e.what()).startsWith("task.toml:6: TOML syntax error: Error while parsing"));
    QVERIFY(QString::fromStdString(e.detail()).startsWith("TOML syntax error: "));
  }
}

void TestManifestParser::largeTunableSpaceChecksFirstPoint() {
  // 100 x 100 = 10000 points: more than the 4096 checked exhaustively, so only the first values
  // (A=1, B=1) are checked and the failing combinations further in do not reject the manifest.
  QStringList a, b;
  for (int i = 1; i <= 100; ++i) {
    a << QString::number(i);
    b << QString::number(i * 100);
  }
  const QString text = manifest({}, "[launch]\nkernel = \"k\"\ngrid = [\"rows\"]\nblock = [\"A * B\"]\n"
                                    "args = [\"x\", \"y\"]\n[tunables]\nA = [" +
                                        a.join(", ") + "]\nB = [" + b.join(", ") + "]");
  QCOMPARE(errorOf(text), QStringLiteral("(parsed without error)"));

  // With a small space, every point is checked: A=11, B=100 is the first to exceed 1024 threads.
  const QString small = manifest({}, "[launch]\nkernel = \"k\"\ngrid = [\"rows\"]\nblock = [\"A * B\"]\n"
                                     "args = [\"x\", \"y\"]\n[tunables]\nA = [1, 10, 11]\nB = [100]");
  QCOMPARE(errorOf(small), QStringLiteral("task.toml:30: launch.block: 'A * B' evaluates to 1100 for configuration "
                                          "'c' with A=11, B=100; expected block x <= 1024"));
}

void TestManifestParser::json() {
  const Task task = loadTask(sourceDir() / "kernels" / "softmax");
  const nlohmann::json j = taskToJson(task);
  QCOMPARE(j["name"].get<std::string>(), std::string("softmax"));
  QCOMPARE(j["sizes"], nlohmann::json({"rows", "cols"}));
  QCOMPARE(j["seeds"], nlohmann::json({1, 2, 3}));
  QCOMPARE(j["tensors"].size(), std::size_t{2});
  QCOMPARE(j["tensors"][0]["name"].get<std::string>(), std::string("x"));
  QCOMPARE(j["tensors"][0]["shape"], nlohmann::json({"rows", "cols"}));
  QCOMPARE(j["tensors"][0]["init"][0]["kind"].get<std::string>(), std::string("normal"));
  QCOMPARE(j["tensors"][0]["init"][0]["std"].get<double>(), 4.0);
  QCOMPARE(j["tensors"][1]["tolerance"]["rtol"].get<double>(), 1e-5);
  QCOMPARE(j["reference"]["source"].get<std::string>(), std::string("reference.cu"));
  QCOMPARE(j["reference"]["shared_bytes"].get<std::string>(), std::string("0"));
  QCOMPARE(j["launch"]["block"], nlohmann::json({"BLOCK"}));
  QCOMPARE(j["tunables"][0]["values"], nlohmann::json({128, 256, 512, 1024}));
  QCOMPARE(j["cost"]["flops"].get<std::string>(), std::string("5 * rows * cols"));
  QCOMPARE(j["starter"].get<std::string>(), std::string("softmax.cu"));

  const auto &wide = j["configs"][1];
  QCOMPARE(wide["name"].get<std::string>(), std::string("wide"));
  QCOMPARE(wide["sizes"]["cols"].get<std::int64_t>(), std::int64_t{32768});
  QCOMPARE(wide["tensors"]["x"]["shape"], nlohmann::json({256, 32768}));
  QCOMPARE(wide["tensors"]["x"]["elements"].get<std::int64_t>(), std::int64_t{256} * 32768);
  QCOMPARE(wide["tensors"]["y"]["bytes"].get<std::int64_t>(), std::int64_t{4} * 256 * 32768);
  QCOMPARE(wide["flops"].get<std::int64_t>(), std::int64_t{5} * 256 * 32768);
  QCOMPARE(wide["bytes"].get<std::int64_t>(), std::int64_t{8} * 256 * 32768);

  // A tolerance of "exact" and an absent launch read plainly.
  const Task base = parseManifest(manifest({{17, "tolerance = \"exact\""}}).toStdString(), "task.toml", {});
  const nlohmann::json b = taskToJson(base);
  QCOMPARE(b["tensors"][1]["tolerance"].get<std::string>(), std::string("exact"));
  QVERIFY(b["launch"].is_null());
  QVERIFY(b["starter"].is_null());
  QCOMPARE(b["starter_source"].get<std::string>(), std::string("ref.cu"));

  // Generator parameters under their manifest names; randint's bounds as integers.
  const Task r = parseManifest(
      manifest({{12, "init = { kind = \"randint\", low = -3, high = 4, seed_offset = 2 }"}}).toStdString(),
      "task.toml", {});
  QCOMPARE(taskToJson(r)["tensors"][0]["init"],
           nlohmann::json({{"kind", "randint"}, {"low", -3}, {"high", 4}, {"seed_offset", 2}}));
  QVERIFY(taskToJson(r)["tensors"][0]["init"]["low"].is_number_integer());
  const Task c = parseManifest(manifest({{12, "init = { kind = \"constant\", value = 0.5 }"}}).toStdString(),
                               "task.toml", {});
  QCOMPARE(taskToJson(c)["tensors"][0]["init"],
           nlohmann::json({{"kind", "constant"}, {"value", 0.5}, {"seed_offset", 0}}));
}

// Issue 17, 3: a key of 50,000 dotted parts (as a key or a table header) crashed toml++'s
// recursion, in every reader of the file. Refused before parsing, with the line; a huge key part
// gives a short message; what real manifests hold still parses.
void TestManifestParser::shapeLimitsBeforeParsing() {
  std::string parts = "a";
  for (int i = 0; i < 50000; ++i) parts += ".a";
  for (const std::string &deep : {manifest().toStdString() + parts + " = 1\n",
                                  manifest().toStdString() + "[" + parts + "]\n",
                                  manifest().toStdString() + "x = { " + parts + " = 1 }\n"}) {
    const QString e = errorOf(QString::fromStdString(deep));
    QVERIFY2(e.contains(QStringLiteral("more than 32 dotted parts")), qPrintable(e.left(300)));
    QVERIFY2(e.startsWith(QStringLiteral("task.toml:%1:").arg(manifest().count('\n') + 1)), qPrintable(e.left(300)));
  }
  // 32 parts are read as TOML (and refused as an unknown key, not as a shape).
  std::string fine = "a";
  for (int i = 1; i < 32; ++i) fine += ".a";
  QVERIFY(errorOf(manifest() + QString::fromStdString(fine) + QStringLiteral(" = 1")).contains(QStringLiteral("unknown key")));
  // A 10 MB key: a short message naming its size.
  const std::string huge(10 << 20, 'k');
  const QString e = errorOf(QString::fromStdString(huge + " = 1\n"));
  QVERIFY2(e.size() < 300, qPrintable(e.left(300)));
  QVERIFY2(e.contains(QStringLiteral("bytes")), qPrintable(e));
  const std::string quoted = "\"" + std::string(1000, 'q') + "\" = 1\n";
  QVERIFY2(errorOf(QString::fromStdString(quoted)).contains(QStringLiteral("a key part of 1000 bytes")),
           qPrintable(errorOf(QString::fromStdString(quoted)).left(300)));
  // Dots inside strings, comments and values are not key parts; long strings as values are fine.
  const std::string dotted(200, '.');
  PARSE(t, manifest({{2, QString::fromStdString("description = \"" + dotted + std::string(2000, 'd') + "\" # " + dotted)}}));
  QCOMPARE(t.description.size(), std::size_t(2200));
  // Every bundled manifest and lineage is within the limits.
  for (const auto &entry : std::filesystem::recursive_directory_iterator(sourceDir() / "kernels")) {
    const auto name = entry.path().filename();
    if (name != "task.toml" && name != "lineage.toml") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const auto problem = kwb::checkTomlShape(text.str());
    QVERIFY2(!problem, (entry.path().string() + ": " + (problem ? problem->message : "")).c_str());
  }
}

// Found by tests/fuzz/fuzz_manifest.cpp: toml++ 3.3 tests a character that is not ASCII for
// Unicode whitespace where a value or the text after a line-ending backslash starts, and for most
// such characters (U+00A1..U+0499 among them) reaches __builtin_unreachable: undefined behaviour.
// Refused first, with the line; in strings and comments they stay welcome.
void TestManifestParser::nonAsciiOnlyInStringsAndComments() {
  QString e = errorOf(manifest({{2, QStringLiteral("description =\u00a1 \"x\"")}}));
  QVERIFY2(e.startsWith(QStringLiteral("task.toml:2:")) && e.contains(QStringLiteral("not ASCII outside a string or a comment")),
           qPrintable(e));
  e = errorOf(manifest({{2, QStringLiteral("description = \"\"\"a \\\n   \u00a1b\"\"\"")}}));
  QVERIFY2(e.contains(QStringLiteral("first after a line-ending backslash")), qPrintable(e));
  PARSE(t, manifest({{2, QStringLiteral("description = \"\u00a1caf\u00e9 \u2014 \u00b5s\" # na\u00efve \u00a1")}}));
  QCOMPARE(QString::fromStdString(t.description), QStringLiteral("\u00a1caf\u00e9 \u2014 \u00b5s"));
  PARSE(m, manifest({{2, QStringLiteral("description = \"\"\"a \\\n   b\u00a1\"\"\"")}}));
  QCOMPARE(QString::fromStdString(m.description), QStringLiteral("a b\u00a1"));
  // Control characters (TOML allows none but tab), refused with their line before toml++ reads
  // them: a NUL after a value, then a string holding U+0392, was again undefined behaviour in
  // toml++ 3.3 (the fuzzer's input, cut down).
  const std::string nul = std::string("[[step]]\nfile = 3") + std::string(4, '\0') + "\"02-warp\xce\x92huffle.cu\"\n";
  const auto problem = kwb::checkTomlShape(nul);
  QVERIFY(problem);
  QCOMPARE(problem->line, 2);
  QVERIFY2(problem->message.find("control character (U+0000)") != std::string::npos, problem->message.c_str());
  const auto bell = kwb::checkTomlShape("a = 1\nb = \"x\x07\"\n");
  QVERIFY(bell && bell->line == 2);
  QVERIFY(!kwb::checkTomlShape("a = \"tab\there\"\r\nb = 2\n"));  // tab and CRLF are fine
}

// Issue 17, 2: a source that is a symbolic link (or sits behind one) is resolved and must end
// inside the task folder; a NUL in the name and an oversized file are refused, each with its line.
void TestManifestParser::sourcesStayInsideTheFolder() {
  QTemporaryDir outer;
  QVERIFY(outer.isValid());
  const QString task = outer.filePath(QStringLiteral("task"));
  QVERIFY(QDir().mkpath(task + QStringLiteral("/sub")));
  writeFile(outer.filePath(QStringLiteral("outside.cu")), "// outside\n");
  writeFile(task + QStringLiteral("/sub/real.cu"), "// inside\n");
  const std::filesystem::path folder = task.toStdString();
  auto link = [&](const char *name, const std::string &target) {
    std::filesystem::remove(folder / name);
    std::filesystem::create_symlink(target, folder / name);
  };
  auto withSource = [&](const QString &source) { return errorOf(manifest({{19, "source = \"" + source + "\""}}), folder); };

  link("ref.cu", "/etc/passwd");
  QVERIFY2(withSource(QStringLiteral("ref.cu"))
               .startsWith(QStringLiteral("task.toml:19: reference.source: 'ref.cu' is a symbolic link (or passes through "
                                          "one) to /etc/passwd, outside the task folder")),
           qPrintable(withSource(QStringLiteral("ref.cu"))));
  link("ref.cu", "../outside.cu");
  QVERIFY2(withSource(QStringLiteral("ref.cu")).contains(QStringLiteral("outside the task folder")),
           qPrintable(withSource(QStringLiteral("ref.cu"))));
  link("etc", "/etc");  // a folder link on the way
  QVERIFY2(withSource(QStringLiteral("etc/passwd")).contains(QStringLiteral("to /etc/passwd, outside the task folder")),
           qPrintable(withSource(QStringLiteral("etc/passwd"))));
  link("ref.cu", "sub/real.cu");  // a link that stays inside is fine
  QCOMPARE(withSource(QStringLiteral("ref.cu")), QStringLiteral("(parsed without error)"));
  // A NUL in the name (TOML's \u0000) cut it short before.
  QCOMPARE(withSource(QStringLiteral("sub/real.cu\\u0000.txt")),
           QStringLiteral("task.toml:19: reference.source: holds a NUL character; expected the reference source file "
                          "(a path relative to the task folder)"));
  // Larger than kMaxSourceBytes.
  std::filesystem::resize_file(folder / "sub" / "real.cu", kwb::kMaxSourceBytes + 1);
  QVERIFY2(withSource(QStringLiteral("sub/real.cu")).contains(QStringLiteral("a source may have at most 4194304")),
           qPrintable(withSource(QStringLiteral("sub/real.cu"))));
}

// Issue 17, 5: reading a candidate or a task's file: a FIFO (it hung kwb eval), a device
// (/dev/zero aborted with bad_alloc), a folder or an oversized file is refused at once, naming
// what it is; a task's file is read through its resolved path, never through a link out.
void TestManifestParser::sourceFilesAreRegularAndBounded() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::filesystem::path root = dir.path().toStdString();
  auto refusal = [](const std::filesystem::path &p, kwb::SourceReadOptions o = {}) -> std::string {
    try {
      kwb::readSourceFile(p, o);
    } catch (const kwb::SourceFileError &e) {
      return e.what();
    }
    return "(read)";
  };
  QVERIFY(::mkfifo((root / "fifo.cu").c_str(), 0600) == 0);
  QCOMPARE(refusal(root / "fifo.cu"), "the source " + (root / "fifo.cu").string() + " is a FIFO; expected a regular file");
  QVERIFY2(refusal("/dev/zero").find("is a character device") != std::string::npos, refusal("/dev/zero").c_str());
  QVERIFY2(refusal(root).find("is a folder") != std::string::npos, refusal(root).c_str());
  writeFile(dir.filePath(QStringLiteral("big.cu")), QString(100, QLatin1Char('x')));
  kwb::SourceReadOptions small;
  small.maxBytes = 64;
  small.what = "candidate";
  QVERIFY2(refusal(root / "big.cu", small).find("the candidate " + (root / "big.cu").string() + " is 100 bytes or more; at most 64") !=
               std::string::npos,
           refusal(root / "big.cu", small).c_str());
  QCOMPARE(kwb::readSourceFile(root / "big.cu").size(), std::size_t(100));
  std::filesystem::create_symlink(root / "big.cu", root / "link.cu");
  kwb::SourceReadOptions noFollow;
  noFollow.followFinalLink = false;
  QVERIFY2(refusal(root / "link.cu", noFollow).find("is a symbolic link") != std::string::npos,
           refusal(root / "link.cu", noFollow).c_str());
  QCOMPARE(refusal(root / "missing.cu"), "cannot read the source " + (root / "missing.cu").string() + ": No such file or directory");
  // A task's file: through a link that stays inside it is read; one that leads out is not.
  Task task;
  task.folder = root / "task";
  std::filesystem::create_directories(task.folder);
  std::filesystem::create_symlink("../big.cu", task.folder / "out.cu");
  std::filesystem::copy_file(root / "big.cu", task.folder / "in.cu");
  std::filesystem::create_symlink("in.cu", task.folder / "alias.cu");
  QCOMPARE(kwb::readTaskFile(task, "alias.cu").size(), std::size_t(100));
  try {
    kwb::readTaskFile(task, "out.cu");
    QFAIL("a link out of the task folder was read");
  } catch (const kwb::SourceFileError &e) {
    QVERIFY2(std::string(e.what()).find("outside the task folder") != std::string::npos, e.what());
  }
}

// Issue 17, 6: a key with a newline forged a line reading "/etc/passwd:1: valid", and escape
// sequences reached the terminal raw. Messages escape control characters (C0, DEL, C1) and cap
// their length, cutting at a character boundary.
void TestManifestParser::messagesEscapeControlCharacters() {
  const QString e = errorOf(manifest() + QStringLiteral("\"evil\\u001b[2J\\n/etc/passwd:1: valid\\u009b\" = 1"));
  QVERIFY2(e.contains(QStringLiteral("evil\\x1b[2J\\n/etc/passwd:1: valid\\u009b")), qPrintable(e));
  QVERIFY2(!e.contains(QLatin1Char('\n')) && !e.contains(QChar(0x1b)) && !e.contains(QChar(0x9b)), qPrintable(e));
  QCOMPARE(kwb::printable("a\tb\rc\x7f"), std::string("a\\tb\\rc\\x7f"));
  const std::string longText = std::string(10, 'x') + "\xc3\xa9" + std::string(10, 'y');  // an é across the cut
  QCOMPARE(kwb::printable(longText, 11), std::string(10, 'x') + "\u2026 (22 bytes)");
  QCOMPARE(kwb::printable(longText, 100), longText);
}

QTEST_APPLESS_MAIN(TestManifestParser)
#include "tst_manifest_parser.moc"

