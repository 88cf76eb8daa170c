#!/usr/bin/env bash
# Issue 45: the relocatable bundle (packaging/make-bundle.sh) unpacked where a user unpacks a
# tarball, under /tmp and under $HOME, both of which the sandbox covers, and its programs started in
# the sandbox from there, each way that works here (bwrap, unshare): the worker (`kwb devices`), the
# compile service (a compile-only `kwb eval` of a device-only task), nvcc (one of a task with a host
# launcher) and kwb-worker started again inside a finished sandbox (`kwb-worker --sandbox-exec`, as
# --sanitize's compute-sanitizer and a host launcher's process start it). Each must find the
# bundle's libraries ($ORIGIN/../lib) in there.
#
# This machine has the system's copies of the bundle's libraries, which the loader would take
# instead: the libraries kwb-worker takes from the bundle that the sandbox's own tools (bwrap,
# unshare, prlimit, mount, nvcc and the CUDA tools, the host compiler) do not need are hidden, an
# empty file bound over each system copy in a mount namespace of this check's own, as on a machine
# without them (the GPU machine of issue 45 had no toml++).
#   packaging/check-bundle-sandbox.sh TARBALL WORK_DIR
# Needs root (CI) or `unshare --map-root-user --mount`. Exit status 0 when every start worked.
set -euo pipefail
fail() { echo "check-bundle-sandbox: $*" >&2; exit 1; }

if [ "${1:-}" = --inside ]; then
  # In the mount namespace: hide the system's copies, then start the bundle's programs.
  work=$2; shift 2
  while read -r file; do mount --bind "$work/empty" "$file" || fail "cannot hide $file"; done < "$work/hidden"
  status=0
  cuda=$(cat "$work/cuda")
  run() {  # LABEL COMMAND...: the command's output kept in LABEL.log; a failure is reported, not fatal
    local label=$1; shift
    if "$@" > "$work/$label.log" 2>&1; then
      echo "check-bundle-sandbox: $label: ok"
    else
      echo "check-bundle-sandbox: $label: FAILED (exit $?):" >&2
      sed 's/^/  | /' "$work/$label.log" | tail -20 >&2
      status=1
    fi
  }
  for place in $(cat "$work/places"); do
    dir=$(ls -d "$place"/kernel-workbench-*)
    kernels="$dir/usr/share/kernel-workbench/kernels"
    where=$([ "${place#/tmp/}" != "$place" ] && echo tmp || echo home)
    for kind in bwrap unshare; do
      if [ "$kind" = bwrap ]; then
        probe=(bwrap --ro-bind / / --dev /dev --proc /proc --unshare-net --unshare-pid --unshare-ipc true)
      else
        probe=(unshare --net --mount --ipc --pid --fork --kill-child --mount-proc --map-root-user true)
      fi
      if ! "${probe[@]}" > /dev/null 2>&1; then
        echo "check-bundle-sandbox: $kind does not work here: its starts are not checked"
        continue
      fi
      bare() {  # a fresh cache each time: every compile runs
        local xdg="$work/xdg/$label"
        env -i PATH="/usr/bin:/bin:$cuda/bin" HOME="$HOME" XDG_DATA_HOME="$xdg/data" XDG_CONFIG_HOME="$xdg/config" \
          XDG_CACHE_HOME="$xdg/cache" KWB_SANDBOX=$kind "$@"
      }
      evaluates() {  # compiled, then not run for want of a GPU here (exit 3), or run
        local rc=0
        bare "$dir/kwb" eval "$@" --config small --json || rc=$?
        [ $rc = 0 ] || [ $rc = 3 ]
      }
      # The compile service (NVRTC) and nvcc (a host launcher) compile in the sandbox, and the worker
      # starts in it (to find no GPU here).
      tasks=("softmax" "$kernels/softmax")
      [ -x "$cuda/bin/nvcc" ] && tasks+=("blur-08" "$kernels/blur $kernels/blur/lineage/08-register-stream.cu")
      for ((i = 0; i < ${#tasks[@]}; i += 2)); do
        label="$where-$kind-eval-${tasks[i]}"
        run "$label" evaluates ${tasks[i + 1]}
        grep -q "\"sandbox\": \"$kind\"" "$work/$label.log" ||
          { echo "check-bundle-sandbox: $label: the compile did not run in $kind" >&2; status=1; }
        if said=$(grep -m1 -o "did not start[^\"]*\|could not be started[^\"]*" "$work/$label.log"); then
          echo "check-bundle-sandbox: $label: the worker $said" >&2
          status=1
        fi
      done
      # kwb-worker started again inside a finished sandbox (unshare: the worker locks down itself).
      if [ "$kind" = unshare ]; then
        mkdir -p "$work/private-$where"
        run "$where-unshare-restart" bare unshare --net --mount --ipc --pid --fork --kill-child --mount-proc --map-root-user -- \
          "$dir/usr/bin/kwb-worker" --sandbox-exec --private-dir "$work/private-$where" -- "$dir/usr/bin/kwb-worker" --version
      fi
    done
  done
  # Whatever was said, never the loader's (a program that could not load its libraries).
  if found=$(grep -l "error while loading shared libraries" "$work"/*.log); then
    echo "check-bundle-sandbox: a program could not load its libraries: $(echo $found)" >&2
    status=1
  fi
  exit $status
fi

tarball=$(realpath "$1"); work=$(realpath -m "$2")
rm -rf "$work"; mkdir -p "$work/xdg"
: > "$work/empty"
places=("$(mktemp -d /tmp/kwb-bundle-check.XXXXXX)" "$(mktemp -d "$HOME/kwb-bundle-check.XXXXXX")")
trap 'rm -rf "${places[@]}"' EXIT
for place in "${places[@]}"; do tar -C "$place" -xzf "$tarball"; done
printf '%s\n' "${places[@]}" > "$work/places"
dir=$(ls -d "${places[0]}"/kernel-workbench-*)

# The toolkit: the one whose nvcc is on PATH, else /usr/local/cuda.
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuda=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
echo "$cuda" > "$work/cuda"
# What the sandbox's own tools load: never hidden.
tools=()
for t in bwrap unshare prlimit mount env sh bash true gcc g++ cc c++ as ld; do
  p=$(command -v "$t" || true); [ -n "$p" ] && tools+=("$p")
done
for t in cc1 cc1plus collect2; do p=$(gcc -print-prog-name=$t 2> /dev/null || true); [ -x "$p" ] && tools+=("$p"); done
for p in "$cuda"/bin/* "$cuda"/nvvm/bin/* "$cuda"/compute-sanitizer/*; do [ -f "$p" ] && [ -x "$p" ] && tools+=("$p"); done
toolLibraries=$(for p in "${tools[@]}"; do ldd "$p" 2> /dev/null || true; done | awk '$2 == "=>" {print $1}' | sort -u)
# The libraries kwb-worker takes from the bundle, and the system's copies of those the tools do not need.
workerLibraries=$(ldd "$dir/usr/bin/kwb-worker" | awk -v lib="$dir/usr/" '$2 == "=>" && index($3, lib) == 1 {print $1}')
: > "$work/hidden"
hiddenNames=()
cache=$(ldconfig -p)
for name in $workerLibraries; do
  grep -qxF "$name" <<< "$toolLibraries" && continue
  while read -r path; do
    [ -n "$path" ] || continue
    readlink -f "$path" >> "$work/hidden"
    hiddenNames+=("$name")
  done < <(awk -v n="$name" '$1 == n {print $NF}' <<< "$cache")
done
sort -u -o "$work/hidden" "$work/hidden"
if [ ! -s "$work/hidden" ]; then
  # Nothing of the bundle's has a system copy here: the loader can only take the bundle's.
  echo "check-bundle-sandbox: no system copy of the bundle's libraries to hide (the worker's: $(echo $workerLibraries))"
else
  echo "check-bundle-sandbox: hiding the system's $(printf '%s\n' "${hiddenNames[@]}" | sort -u | tr '\n' ' ')"
fi
namespace=(unshare --mount --propagation private)
[ "$(id -u)" = 0 ] || namespace=(unshare --map-root-user --mount --propagation private)
"${namespace[@]}" bash "$0" --inside "$work" || fail "a bundle unpacked under /tmp or \$HOME did not start in the sandbox (logs in $work)"
echo "check-bundle-sandbox: unpacked under /tmp and \$HOME, the bundle's worker, compile service and nvcc started in the sandbox"
