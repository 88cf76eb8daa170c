// The kernel in an LLM's answer (core/agent/answer.h): one block, several, revisions, other
// languages beside the code, the wrong kernel, a host launcher, no fence with prose around the
// code, prose only, an answer cut inside its code or after it, nothing at all. Each case gives a
// named outcome and, where a choice was made, a note that says which block and why.
#include <QtTest>

#include "core/agent/answer.h"

using kwb::agent::AnswerOutcome;
using kwb::agent::parseAnswer;

namespace {

const std::string kSoftmax =
    "extern \"C\" __global__ void softmax(const float *x, float *y, long long rows, long long cols) {\n"
    "  y[0] = x[0];\n"
    "}\n";
const std::string kSoftmaxV2 =
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "softmax(const float *x, float *y, long long rows, long long cols) {\n"
    "  y[1] = x[1];\n"
    "}\n";

std::string fenced(const std::string &code, const std::string &language = "cuda", const std::string &fence = "```") {
  return fence + language + "\n" + code + fence + "\n";
}

}  // namespace

class TestAnswerParser : public QObject {
  Q_OBJECT

 private slots:
  void oneBlock() {
    const auto a = parseAnswer("Here is a faster version:\n\n" + fenced(kSoftmax) + "\nIt uses warp shuffles.", "softmax");
    QCOMPARE(a.outcome, AnswerOutcome::Code);
    QCOMPARE(a.source, kSoftmax);
    QCOMPARE(a.language, std::string("cuda"));
    QCOMPARE(a.blocks, std::size_t(1));
    QCOMPARE(a.chosen, std::size_t(1));
    QVERIFY(a.note.empty());
    QCOMPARE(std::string(kwb::agent::answerOutcomeName(a.outcome)), std::string("code"));
  }

  void theLastRevisionIsTaken() {
    const auto a = parseAnswer("First try:\n" + fenced(kSoftmax) + "Wait, better:\n" + fenced(kSoftmaxV2, "cpp"), "softmax");
    QCOMPARE(a.outcome, AnswerOutcome::Code);
    QCOMPARE(a.chosen, std::size_t(2));
    QCOMPARE(a.source, kSoftmaxV2);
    QVERIFY2(a.note.find("2 code blocks: block 2, the last that defines 'softmax'") != std::string::npos, a.note.c_str());
  }

  void otherLanguagesBesideTheCode() {
    const auto a = parseAnswer(fenced(kSoftmax, "") + "Compile it with:\n" + fenced("nvcc -O3 softmax.cu\n", "bash") +
                                   fenced("import torch\nprint(torch.__version__)\n", "python"),
                               "softmax");
    QCOMPARE(a.outcome, AnswerOutcome::Code);
    QCOMPARE(a.chosen, std::size_t(1));
    QCOMPARE(a.blocks, std::size_t(3));
    QVERIFY2(a.note.find("the one that defines") != std::string::npos, a.note.c_str());
    const auto python = parseAnswer(fenced("def softmax(x):\n  return x\n", "python"), "softmax");
    QCOMPARE(python.outcome, AnswerOutcome::NoCode);
    QVERIFY(python.source.empty());
  }

  void theWrongKernelIsNamed() {
    const auto a = parseAnswer(fenced("__global__ void softmax_fast(float *y) { y[0] = 1; }\n"), "softmax");
    QCOMPARE(a.outcome, AnswerOutcome::MissingKernel);
    QVERIFY(!a.source.empty());
    QVERIFY2(a.note.find("'softmax'") != std::string::npos, a.note.c_str());
    // softmax( called from a kernel of another name does not define it.
    const auto caller = parseAnswer(fenced("__global__ void outer(float *y) { softmax(y); }\n"), "softmax");
    QCOMPARE(caller.outcome, AnswerOutcome::MissingKernel);
  }

  void aHostLauncher() {
    const std::string launcher = "#include <cuda_runtime.h>\n__global__ void k(float *y) {}\n"
                                 "extern \"C\" cudaError_t kwb_launch(void *const *args, cudaStream_t s) {\n"
                                 "  return cudaSuccess;\n}\n";
    const auto a = parseAnswer(fenced(launcher, "c++"), "softmax");
    QCOMPARE(a.outcome, AnswerOutcome::Code);
    QCOMPARE(a.source, launcher);
  }

  void noFenceWithProseAround() {
    const std::string text = "Sure! The kernel below fuses the passes.\n\n#include <cuda_runtime.h>\n" + kSoftmax +
                             "\nThis should be about 2x faster.\n";
    const auto a = parseAnswer(text, "softmax");
    QCOMPARE(a.outcome, AnswerOutcome::Code);
    QVERIFY(a.unfenced);
    QCOMPARE(a.source, "#include <cuda_runtime.h>\n" + kSoftmax);
    QVERIFY2(a.note.find("no code fence: lines 3-6") != std::string::npos, a.note.c_str());
  }

  void proseOnly() {
    const auto a = parseAnswer("I would use warp shuffles and float4 loads; the rest stays the same.", "softmax");
    QCOMPARE(a.outcome, AnswerOutcome::NoCode);
    QCOMPARE(a.note, std::string("no code in the answer"));
  }

  void cutInsideTheCode() {
    const std::string text = "Here:\n```cuda\nextern \"C\" __global__ void softmax(const float *x, float *y) {\n  float m =";
    const auto a = parseAnswer(text, "softmax", "length");
    QCOMPARE(a.outcome, AnswerOutcome::Truncated);
    QVERIFY(a.source.find("float m =") != std::string::npos);
    QVERIFY2(a.note.find("finish reason length") != std::string::npos, a.note.c_str());
    // No finish reason: the missing closing fence alone says so.
    const auto b = parseAnswer(text, "softmax");
    QCOMPARE(b.outcome, AnswerOutcome::Truncated);
    QVERIFY2(b.note.find("closing fence never came") != std::string::npos, b.note.c_str());
    // Unfenced code cut before its braces close, by the server.
    const auto c = parseAnswer("#include <cuda_runtime.h>\n__global__ void softmax(float *y) {\n  y[0] =", "softmax", "max_tokens");
    QCOMPARE(c.outcome, AnswerOutcome::Truncated);
    QVERIFY(c.unfenced);
  }

  void cutAfterTheCode() {
    const auto a = parseAnswer(fenced(kSoftmax) + "The main change is that each warp", "softmax", "length");
    QCOMPARE(a.outcome, AnswerOutcome::Code);
    QVERIFY2(a.note.find("cut the answer after its code") != std::string::npos, a.note.c_str());
  }

  void emptyAnswers() {
    QCOMPARE(parseAnswer("", "softmax").outcome, AnswerOutcome::Empty);
    QCOMPARE(parseAnswer(" \n\t\n", "softmax").outcome, AnswerOutcome::Empty);
    QCOMPARE(parseAnswer("", "softmax", "length").note, std::string("the answer was cut before it said anything"));
  }

  void fenceForms() {
    // Tildes; a longer fence holding a shorter one; CRLF line ends; an info string with more words.
    QCOMPARE(parseAnswer(fenced(kSoftmax, "cuda", "~~~"), "softmax").source, kSoftmax);
    const std::string inner = kSoftmax + "// ```\n";
    const auto four = parseAnswer("````cuda title=\"k.cu\"\n" + inner + "````\n", "softmax");
    QCOMPARE(four.outcome, AnswerOutcome::Code);
    QCOMPARE(four.source, inner);
    QCOMPARE(four.language, std::string("cuda"));
    std::string crlf = fenced(kSoftmax);
    for (std::size_t at = crlf.find('\n'); at != std::string::npos; at = crlf.find('\n', at + 2)) crlf.insert(at, "\r");
    const auto windows = parseAnswer(crlf, "softmax");
    QCOMPARE(windows.outcome, AnswerOutcome::Code);
    QCOMPARE(windows.source, kSoftmax);
    // Any kernel will do when the task names none.
    QCOMPARE(parseAnswer(fenced("__global__ void anything() {}\n"), "").outcome, AnswerOutcome::Code);
  }
};

QTEST_GUILESS_MAIN(TestAnswerParser)
#include "tst_answer_parser.moc"
