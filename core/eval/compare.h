#pragma once
// Comparing a candidate's output with the reference output, element by element.
//
// Rules (README "Tolerance"), computed in double after decoding each element exactly:
//  - floating point with rtol/atol: an element passes when |got - want| <= atol + rtol × |want|;
//  - integers and bool, and floating point with an exact tolerance: values must be equal
//    (bool compares the stored byte; for floats +0 equals -0);
//  - a NaN in the candidate's output never passes;
//  - a NaN in the reference output means the task is broken, not the candidate: such elements
//    are counted apart (nanInReference), not compared, and the comparison does not pass;
//  - an infinity passes only against the same infinity.
// Error figures (max abs, max rel, relative L2) are over elements where neither value is NaN;
// equal infinities add nothing; a relative error against a zero reference is infinite unless
// the values are equal (as in PyTorch's assert_close).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/task/task.h"

namespace kwb {

struct ElementMismatch {
  std::uint64_t index = 0;
  std::vector<std::int64_t> coordinates;  // row-major per the shape given; {index} without one
  double got = 0.0;                       // decoded (an i64 beyond 2^53 is rounded; the text is exact)
  double want = 0.0;
  std::string gotText;  // the shortest text that reads back as the element's value in its dtype
  std::string wantText;
};

struct ComparisonReport {
  DType dtype = DType::F32;
  bool exact = false;            // compared for equality
  std::uint64_t checked = 0;     // elements looked at (all of them)
  std::uint64_t mismatches = 0;  // candidate elements that fail (NaN included, reference NaN excluded)
  std::vector<ElementMismatch> firstMismatches;  // in index order
  double maxAbsError = 0.0;
  std::uint64_t maxAbsErrorIndex = 0;
  double maxRelError = 0.0;
  std::uint64_t maxRelErrorIndex = 0;
  double relativeL2Error = 0.0;  // ||got - want|| / ||want||; 0 when both norms are 0
  std::uint64_t nanInGot = 0;
  std::uint64_t nanInReference = 0;  // > 0: the task's reference is broken
  std::vector<std::uint64_t> firstReferenceNaN;
  // One line, e.g. "12 of 1048576 elements differ (first at [3, 17]: got 0.51, want 0.49);
  // max abs err 0.021, rel L2 3.4e-06".
  std::string summary;

  bool passed() const { return mismatches == 0 && nanInReference == 0; }
  bool referenceBroken() const { return nanInReference > 0; }
};

// Compares the first `count` elements of `got` and `want` (both of `dtype`). `shape` (row-major,
// its product equal to count) gives the coordinates in the report; pass {} for flat indices.
// Throws std::invalid_argument when a buffer is too small.
//
// The work is split into contiguous index ranges over `threads` threads (0: one per hardware
// thread from 2^20 elements on, else the calling thread only). The report does not depend on
// `threads`: the relative L2 error's sums are taken per block of 2^16 elements and added in
// block order (so beyond 2^16 elements it may differ in its last bits from one running sum),
// and the maxima are at the first index that reaches them.
ComparisonReport compareOutputs(std::span<const std::byte> got, std::span<const std::byte> want, DType dtype,
                                std::uint64_t count, const Tolerance &tolerance,
                                std::span<const std::int64_t> shape = {}, std::size_t maxReported = 10,
                                unsigned threads = 0);

// Whether two buffers hold the same bytes (false when their sizes differ); over `threads`
// threads (0: one per hardware thread from 4 MiB on, else one).
bool sameBits(std::span<const std::byte> a, std::span<const std::byte> b, unsigned threads = 0);

// Two runs of the candidate on the same inputs, for the race check.
struct RunDifference {
  std::uint64_t checked = 0;
  std::uint64_t differentBits = 0;                   // elements whose bytes differ
  std::uint64_t beyondRounding = 0;                  // elements that differ by more than the tolerance allows
  std::vector<ElementMismatch> firstBeyondRounding;  // got: run 1, want: run 2
  double maxAbsDifference = 0.0;                     // over elements where neither run is NaN
  std::string summary;

  bool race() const { return beyondRounding > 0; }
};

// Compares run 1 with run 2 element by element. An element differs beyond rounding when
// |a - b| > atol + rtol × max(|a|, |b|) (values differ, for exact tolerances and integer
// dtypes), when only one of them is NaN, or when an infinity meets anything but itself; two
// NaNs agree even when their bits differ. `threads` as for compareOutputs; the result does not
// depend on it.
RunDifference differenceBeyondRounding(std::span<const std::byte> run1, std::span<const std::byte> run2,
                                       DType dtype, std::uint64_t count, const Tolerance &tolerance,
                                       std::span<const std::int64_t> shape = {},
                                       std::size_t maxReported = 10, unsigned threads = 0);

// Whether one constant output would pass the comparison against this reference output at every
// element — then a kernel that writes zeros (or any fixed value) passes, the reward hack of
// tasks whose true outputs are (near) zero or constant. Tried: 0, the first element, the
// midrange and the mean, each rounded to the dtype.
struct ConstantOutputCheck {
  bool nearConstant = false;
  double constant = 0.0;  // a constant that passes, when nearConstant
  std::string warning;    // empty unless nearConstant
};
ConstantOutputCheck isNearConstant(std::span<const std::byte> reference, DType dtype, std::uint64_t count,
                                   const Tolerance &tolerance, std::string_view tensorName = "output");

// The shortest text that reads back as this element's value in its dtype: "0.51", "-3", "NaN",
// "inf", "true"; a bool byte other than 0 and 1 as "0x02".
std::string formatElement(const std::byte *element, DType dtype);

}  // namespace kwb
