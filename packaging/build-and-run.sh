#!/usr/bin/env bash
# One command from a fresh clone: install, build, and open the workbench on a bundled task.
# With no display it opens the same window offscreen, saves a screenshot, prints where, exits 0.
#   packaging/build-and-run.sh [TASK_FOLDER]      (default: kernels/softmax)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KWB_BUILD_DIR:-$root/build}
# Only what it opens: the window, the worker it starts, and the command-line tool (the test
# command, packaging/build-and-test.sh, builds the rest: tests and benchmarks).
"$root/packaging/build.sh" kernel-workbench kwb-worker kwb
task=${1:-$root/kernels/softmax}
app="$build/app/gui/kernel-workbench"
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  exec "$app" "$task"
fi
mkdir -p "$build/screenshots"
echo "No display: running the workbench offscreen on $task"
shot="$build/screenshots/main-window.png"
rm -f "$shot"
QT_QPA_PLATFORM=offscreen "$app" --screenshot "$shot" "$task"
[ -s "$shot" ] || { echo "build-and-run: the workbench did not write $shot" >&2; exit 1; }
echo "Screenshot of the workbench on $(basename "$task"): $shot"
