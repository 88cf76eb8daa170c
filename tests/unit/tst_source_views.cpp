// Source, PTX and SASS side by side (core/compile/source_views.h): a real kernel compiled by
// NVRTC with line information, its PTX and its SASS (nvdisasm) annotated with source lines that
// point at the right statements; and the listing diff: exact on small inputs, and on the SASS of
// two versions of a kernel it shows the changed instructions, not the shifted addresses.
#include <QtTest>

#include <filesystem>

#include "core/compile/compiler.h"
#include "core/compile/disassembly.h"
#include "core/compile/source_views.h"

namespace fs = std::filesystem;
using kwb::DiffLine;

namespace {

// Line 4 loads and multiplies, line 5 adds and stores: statements to find again in PTX and SASS.
const char *kKernel =
    "extern \"C\" __global__ void axpb(const float *x, float *y, float a, float b, int n) {\n"  // 1
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"                                        // 2
    "  if (i >= n) return;\n"                                                                   // 3
    "  float t = x[i] * a;\n"                                                                   // 4
    "  y[i] = t + b;\n"                                                                         // 5
    "}\n";

kwb::CompileRequest request(const std::string &source) {
  kwb::CompileRequest r;
  r.source = source;
  r.sourceName = "axpb.cu";
  r.arch = "sm_90";
  r.expectedKernels = {"axpb"};
  return r;
}

kwb::Compiler compiler() {
  kwb::CompilerOptions o;
  o.useCache = false;
  return kwb::Compiler(o);
}

int count(const std::vector<DiffLine> &d, DiffLine::Kind k) {
  return static_cast<int>(std::count_if(d.begin(), d.end(), [k](const DiffLine &l) { return l.kind == k; }));
}

}  // namespace

class TestSourceViews : public QObject {
  Q_OBJECT

 private slots:
  void ptxLinesPointAtTheirStatements() {
    const auto ptx = kwb::ptxText(request(kKernel));
    QVERIFY2(ptx.ok, ptx.error.c_str());
    const auto listing = kwb::annotatePtx(ptx.text);
    QVERIFY(listing.hasLineInfo);
    const auto mul = listing.linesFor(4);
    const auto add = listing.linesFor(5);
    QVERIFY(!mul.empty() && !add.empty());
    // Line 4 loads x[i] (NVVM folds its multiply into line 5's fma); line 5 computes and stores.
    bool sawMul = false, sawAdd = false;
    for (int i : mul) sawMul = sawMul || listing.lines[i].text.find("ld.global.f32") != std::string::npos;
    for (int i : add)
      sawAdd = sawAdd || listing.lines[i].text.find("fma.rn.f32") != std::string::npos ||
               listing.lines[i].text.find("add.f32") != std::string::npos;
    QVERIFY(sawMul);
    QVERIFY(sawAdd);
    QCOMPARE(listing.lines[mul.front()].sourceFile.find("axpb.cu") != std::string::npos, true);
    const auto lines = listing.sourceLines();
    QVERIFY(std::find(lines.begin(), lines.end(), 4) != lines.end());
  }

  void sassLinesPointAtTheirStatements() {
    const auto tools = kwb::findDisassemblyTools();
    if (tools.nvdisasm.empty())
      QSKIP("nvdisasm is not installed here (packaging/install-deps.sh fetches it): SASS has no line information");
    const auto r = compiler().compile(request(kKernel));
    QVERIFY(r.ok);
    const auto sass = kwb::sassText(r.image, tools);
    QVERIFY2(sass.ok, sass.error.c_str());
    const auto listing = kwb::annotateSass(sass.text);
    QVERIFY2(listing.hasLineInfo, sass.text.c_str());
    // The multiply and add fold into one FFMA (x*a + b) on line 5, or stay FMUL (4) and FADD (5).
    bool found = false;
    for (int line : {4, 5})
      for (int i : listing.linesFor(line)) {
        const auto &t = listing.lines[i].text;
        found = found || t.find("FFMA") != std::string::npos || t.find("FMUL") != std::string::npos ||
                t.find("FADD") != std::string::npos;
      }
    QVERIFY2(found, sass.text.c_str());
    for (const auto &l : listing.lines) QVERIFY(l.text.find("//## File") == std::string::npos);
  }

  void diffIsExactOnSmallInputs() {
    const auto d = kwb::diffListings("a\nb\nc\nd\n", "a\nc\nd\ne\n");
    QCOMPARE(kwb::formatDiff(d), std::string(" a\n-b\n c\n d\n+e\n"));
    QCOMPARE(kwb::formatDiff(kwb::diffListings("", "x\n")), std::string("+x\n"));
    QCOMPARE(kwb::formatDiff(kwb::diffListings("x\n", "")), std::string("-x\n"));
    QVERIFY(kwb::diffListings("", "").empty());
    // Addresses and encodings do not count; the instruction does.
    const auto same = kwb::diffListings("        /*0010*/  IMAD R1, R2, R3, RZ ;  /* 0x000fe200078e02ff */\n",
                                        "        /*0a30*/  IMAD R1, R2, R3, RZ ;  /* 0x000fc400078e02ff */\n");
    QCOMPARE(count(same, DiffLine::Kind::Same), 1);
    QCOMPARE(kwb::normalizeListingLine("\t.loc 1 4 3"), std::string());
  }

  void sassDiffOfTwoCandidatesShowsTheChange() {
    const auto tools = kwb::findDisassemblyTools();
    if (!tools.any()) QSKIP("neither nvdisasm nor cuobjdump is installed here");
    std::string other = kKernel;
    other.replace(other.find("t + b"), 5, "t * b");  // the add becomes a multiply
    const auto c = compiler();
    const auto a = c.compile(request(kKernel)), b = c.compile(request(other));
    QVERIFY(a.ok && b.ok);
    const auto sa = kwb::sassText(a.image, tools), sb = kwb::sassText(b.image, tools);
    QVERIFY(sa.ok && sb.ok);
    const auto d = kwb::diffListings(sa.text, sb.text);
    QVERIFY(count(d, DiffLine::Kind::Removed) >= 1);
    QVERIFY(count(d, DiffLine::Kind::Added) >= 1);
    QVERIFY2(count(d, DiffLine::Kind::Same) > count(d, DiffLine::Kind::Removed) + count(d, DiffLine::Kind::Added),
             kwb::formatDiff(d).c_str());
    bool mulAdded = false;
    for (const auto &l : d) mulAdded = mulAdded || (l.kind == DiffLine::Kind::Added && l.text.find("FMUL") != std::string::npos);
    QVERIFY2(mulAdded, kwb::formatDiff(d).c_str());
  }
};

QTEST_GUILESS_MAIN(TestSourceViews)
#include "tst_source_views.moc"
