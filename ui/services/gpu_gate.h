#pragma once
// The one rule for "may this GPU-using action start now?" (issue 48, 3): every action the window
// offers asks it, is disabled with its answer in the tooltip, and refuses with the same words
// when called anyway. One GPU job at a time that times anything (a run, a tuning, a session, a
// profile, a lineage build): one of them would time the other. Without a GPU, what needs one
// (profiling, building a lineage, which gates and times every step) says so; what compiles only
// (a run, a session, a de-optimization) goes on and says it compiles only.
#include <QString>

namespace kwb::ui {

enum class GpuAction { Run, Tune, Optimize, Profile, BuildLineage, Deoptimize, TryCard, ResumeSession };

// What the window knows now.
struct GpuState {
  bool taskOpen = false;
  bool kernelToRun = false;     // a CUDA source in the editor, or the task's starter
  bool probed = false;          // the GPU probe answered
  bool gpu = false;             // it found a CUDA device
  QString noGpuWhy;             // the probe's words when it found none ("libcuda is not installed")
  bool evaluating = false, tuning = false, session = false, profiling = false, building = false, trying = false;
};

struct GpuVerdict {
  bool allowed = false;
  QString why;  // when not allowed: why, and what to do; when allowed without a GPU: that it compiles only
};

GpuVerdict gpuVerdict(GpuAction action, const GpuState &state);

}  // namespace kwb::ui
