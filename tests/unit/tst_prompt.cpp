// What a session tells the model (core/agent/prompt.h): the bundled softmax task's specification
// names every tensor, configuration, the launch and the tunables; templates fill their
// placeholders and name an unknown one with its line; an evaluation's feedback keeps the errors
// first with FILE:LINE, trims what is long, lists the failing seeds and the timing.
#include <QtTest>

#include <fstream>

#include "core/agent/prompt.h"
#include "core/agent/prompt_templates.h"
#include "core/task/manifest_parser.h"
#include "helpers/module_state_task.h"
#include "helpers/test_files.h"

using kwb::agent::evaluationFeedback;
using kwb::agent::renderTemplate;

class TestPrompt : public QObject {
  Q_OBJECT

  static bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

 private slots:
  void softmaxSpecification() {
    const auto task = kwb::loadTask(kwb::test::kernelsDir() / "softmax");
    const auto spec = kwb::agent::taskSpec(task);
    qInfo("%s", spec.c_str());
    QVERIFY2(has(spec, "Task `softmax`"), spec.c_str());
    QVERIFY2(has(spec, "- `x`: f32 [rows, cols], input; values normal(mean 0, std 4) / uniform(low -100, high 100) "
                       "(the seeds cycle through them)"),
             spec.c_str());
    QVERIFY2(has(spec, "- `y`: f32 [rows, cols], output; compared within rtol 1e-05, atol 1e-07"), spec.c_str());
    QVERIFY2(has(spec, "- h200: rows = 8192, cols = 8192"), spec.c_str());
    QVERIFY2(has(spec, "`extern \"C\" __global__ void softmax(...)`, launched with grid [rows], block [BLOCK]"), spec.c_str());
    QVERIFY2(has(spec, "its arguments, in order: x, y, rows, cols"), spec.c_str());
    QVERIFY2(has(spec, "BLOCK in {128, 256, 512, 1024}"), spec.c_str());
    QVERIFY2(has(spec, "kwb_launch"), spec.c_str());
    QVERIFY2(has(spec, "Vendor libraries allowed: none."), spec.c_str());
    QVERIFY2(has(spec, "bytes = 2 * 4 * rows * cols"), spec.c_str());
    // An integer task: exact comparison, and an inout tensor.
    const auto histogram = kwb::agent::taskSpec(kwb::loadTask(kwb::test::kernelsDir() / "histogram"));
    QVERIFY2(has(histogram, "- `bins`: i32 [256], input and output (updated in place); values constant(value 0); compared exactly"),
             histogram.c_str());
  }

  // Issue 46: a tensor that is a PyTorch module's weight says so; scale, shift and structure of
  // a generator are in its values.
  void moduleWeightsAndGeneratorExtras() {
    const auto spec = kwb::agent::taskSpec(kwb::parseManifest(kwb::test::kModuleStateManifest, "task.toml", {}));
    QVERIFY2(has(spec, "- `x`: f32 [n, k], input; values randint(low 0, high 2) scale 2, shift -1\n"), spec.c_str());
    QVERIFY2(has(spec, "- `w`: f32 [k, k], input; a module weight (the PyTorch model's `fc.weight`); values "
                       "normal(mean 0, std 1) symmetric\n"),
             spec.c_str());
    QVERIFY2(has(spec, "- `y`: f32 [n, k], output;"), spec.c_str());
  }

  void templatesFillTheirPlaceholders() {
    const std::map<std::string, std::string> v{{"task", "TASK"}, {"feedback", "FB"}};
    QCOMPARE(renderTemplate("A {{task}} B {{ feedback }}.\n", v, "t.md"), std::string("A TASK B FB.\n"));
    // Braces that hold no name stay, as CUDA initialisers need.
    QCOMPARE(renderTemplate("float a[2][2] = {{1, 2}, {3, 4}}; {{}} {{task", v, "t.md"),
             std::string("float a[2][2] = {{1, 2}, {3, 4}}; {{}} {{task"));
    try {
      renderTemplate("line one\nline two {{feedbak}}\n", v, "repair.md");
      QFAIL("an unknown placeholder was accepted");
    } catch (const kwb::agent::PromptTemplateError &e) {
      QCOMPARE(std::string(e.what()), std::string("repair.md:2: unknown placeholder {{feedbak}}; known: feedback, task"));
    }
  }

  // Every bundled template loads and names only placeholders a session fills.
  void bundledTemplatesAreComplete() {
    const std::map<std::string, std::string> all{{"task", "T"},          {"incumbent", "I"}, {"incumbent_feedback", "IF"},
                                                 {"goal", "G"},          {"candidate", "C"}, {"feedback", "F"},
                                                 {"answer_format", "A"}, {"kernel", "K"}};
    const QTemporaryDir noUser;
    for (const auto &name : kwb::agent::promptTemplateNames()) {
      const auto t = kwb::agent::loadPromptTemplate(name, noUser.path().toStdString());
      QVERIFY2(!t.userCopy && !t.text.empty(), name.c_str());
      QVERIFY2(t.path.filename() == name + ".md", t.path.c_str());
      renderTemplate(t.text, all, name + ".md");  // throws on a placeholder nobody fills
    }
  }

  void aUserCopyWinsAndAMissingOneSaysWhere() {
    const QTemporaryDir user, empty;
    std::ofstream(user.filePath("repair.md").toStdString()) << "mine: {{feedback}}\n";
    const auto t = kwb::agent::loadPromptTemplate("repair", user.path().toStdString());
    QVERIFY(t.userCopy);
    QCOMPARE(t.text, std::string("mine: {{feedback}}\n"));
    try {
      kwb::agent::loadPromptTemplate("nonexistent", user.path().toStdString(), empty.path().toStdString());
      QFAIL("a missing template loaded");
    } catch (const std::runtime_error &e) {
      const std::string m = e.what();
      QVERIFY2(has(m, user.filePath("nonexistent.md").toStdString()) && has(m, empty.filePath("nonexistent.md").toStdString()),
               m.c_str());
    }
  }

  void feedbackOfAFailedCompile() {
    kwb::EvaluationResult r;
    r.outcome = kwb::Outcome::CompileError;
    r.message = "the candidate does not compile";
    r.candidate.ok = false;
    for (int i = 1; i <= 20; ++i)
      r.candidate.diagnostics.push_back({"candidate.cu", i, 3, i % 2 ? kwb::Diagnostic::Severity::Warning : kwb::Diagnostic::Severity::Error,
                                         "problem " + std::to_string(i), ""});
    r.candidate.diagnostics.push_back({"candidate.cu", 99, 0, kwb::Diagnostic::Severity::Error, std::string(2000, 'x'), ""});
    kwb::agent::FeedbackLimits limits;
    limits.diagnostics = 5;
    limits.messageChars = 100;
    const auto f = evaluationFeedback(r, limits);
    qInfo("%s", f.c_str());
    QVERIFY2(has(f, "Compile: failed, 11 error(s), 10 other diagnostic(s)"), f.c_str());
    QVERIFY2(has(f, "  candidate.cu:2:3: error: problem 2\n"), f.c_str());  // errors first
    QVERIFY2(!has(f, "warning"), f.c_str());                                 // five errors fill the five lines
    QVERIFY2(has(f, "(16 more not shown)"), f.c_str());
  }

  void feedbackOfAMismatchAndATiming() {
    kwb::EvaluationResult r;
    r.outcome = kwb::Outcome::Incorrect;
    r.message = "incorrect on 1 of 2 configuration(s)";
    r.candidate.ok = true;
    kwb::ConfigOutcome small;
    small.config = "small";
    small.outcome = kwb::Outcome::Incorrect;
    small.reason = "mismatch";
    small.message = "seed 2: y: 76259 of 1048576 elements differ (first at [0, 0]: got 0, want 1.89e-06)";
    for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
      kwb::SeedOutcome so;
      so.seed = seed;
      so.passed = seed == 1;
      so.summary = "y: first at [" + std::to_string(seed) + ", 0]";
      small.seeds.push_back(so);
    }
    kwb::ConfigOutcome big;
    big.config = "h200";
    big.outcome = kwb::Outcome::Correct;
    kwb::TimingOutcome t;
    t.ok = true;
    t.candidate.median = 0.2559;
    t.candidate.relativeSpread = 0.005;
    t.reference.median = 0.3399;
    t.speedup = 1.328;
    big.timing = t;
    r.configs = {small, big};
    const auto f = evaluationFeedback(r, {}, "at 71% of the memory bound; 1.4x headroom");
    qInfo("%s", f.c_str());
    QVERIFY2(has(f, "Configuration small: incorrect (mismatch): seed 2: y: 76259 of 1048576 elements differ (first at [0, 0]"), f.c_str());
    QVERIFY2(has(f, "  seed 2: y: first at [2, 0]\n"), f.c_str());
    QVERIFY2(has(f, "  seed 4: y: first at [4, 0]\n  (more seeds failed)"), f.c_str());  // three failing seeds shown
    QVERIFY2(!has(f, "seed 1:"), f.c_str());
    QVERIFY2(has(f, "Configuration h200: correct\n  timed: candidate 0.2559 ms (spread 0.5%), reference 0.3399 ms, speedup 1.328x; "
                    "at 71% of the memory bound; 1.4x headroom"),
             f.c_str());
    QVERIFY2(!has(f, "Compile:"), f.c_str());  // compiled cleanly: nothing to say
  }
};

QTEST_GUILESS_MAIN(TestPrompt)
#include "tst_prompt.moc"
