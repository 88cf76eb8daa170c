#!/usr/bin/env bash
# Issue 45 on the GPU machine: the relocatable bundle from packaging/make-bundle.sh unpacked where a
# user unpacks a tarball, under $HOME and under /tmp (both covered by the sandbox), and run from
# each place with a bare environment, in each sandbox that works there (bwrap, unshare): a task
# step with a host launcher (its own process, kwb-worker started again inside the sandbox), on
# blur and on gemm-bf16 (sm_90), and `kwb eval --sanitize` of a device-only task (compute-sanitizer
# starts kwb-worker inside the sandbox). Before the fix every host launcher died with status 127
# and --sanitize said "error while loading shared libraries: libtomlplusplus.so.3".
#   packaging/make-bundle.sh build .relbundle   (here), then on the GPU machine:
#   bash tests/gpu/issue45-bundle.sh OUT       (with .relbundle/kernel-workbench-*.tar.gz)
# Writes OUT/bundle45/: summary.txt and one log (and JSON) per run; exits 1 when any run failed.
set -uo pipefail
out=$1; mkdir -p "$out"; r=$out/bundle45; mkdir -p "$r"
tarball=$(ls .relbundle/kernel-workbench-*.tar.gz .relbundle/kernel-workbench-*.tar.xz 2> /dev/null | head -1)
[ -n "$tarball" ] || { echo "issue45-bundle: no .relbundle/kernel-workbench-*.tar.gz (packaging/make-bundle.sh)" >&2; exit 1; }
home=${HOME:-/root}
places=("$home/kwb45-bundle" "/tmp/kwb45-bundle")
status=0
{
  echo "$(date -u +%FT%TZ) on $(. /etc/os-release; echo "$PRETTY_NAME"); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
  echo "tarball: $(basename "$tarball"); user: $(id -un); HOME=$home"
  echo "toml++ on the system: $(ldconfig -p | grep -c libtomlplusplus) (0: only the bundle's)"
} | tee "$r/summary.txt"
note() { echo "$*" | tee -a "$r/summary.txt"; }
# LABEL COMMAND...: output in LABEL.log; failed when it exits non-zero or says what issue 45 saw.
check() {
  local label=$1; shift
  local start=$(date +%s)
  "$@" > "$r/$label.log" 2>&1
  local rc=$?
  local said=$(grep -m1 -o "error while loading shared libraries[^\"]*\|host-launcher-died[^\"]*\|status 127" "$r/$label.log")
  if [ $rc -eq 0 ] && [ -z "$said" ]; then
    note "$label: ok in $(( $(date +%s) - start )) s"
  else
    note "$label: FAILED (exit $rc) ${said}"
    tail -5 "$r/$label.log" | sed 's/^/  | /' | tee -a "$r/summary.txt"
    status=1
  fi
}
for place in "${places[@]}"; do
  rm -rf "$place" && mkdir -p "$place" && tar -C "$place" -xf "$tarball"
  dir=$(ls -d "$place"/kernel-workbench-*)
  k=$dir/usr/share/kernel-workbench/kernels
  where=$([ "${place#/tmp/}" != "$place" ] && echo tmp || echo home)
  env -i PATH=/usr/bin:/bin HOME="$home" "$dir/kwb" devices > "$r/$where-devices.log" 2>&1
  tested=0
  for kind in bwrap unshare; do
    bare() { env -i PATH=/usr/bin:/bin:/usr/local/cuda/bin HOME="$home" KWB_SANDBOX=$kind "$@"; }
    label="$where-$kind-blur-08-host-launcher"
    check "$label" bare "$dir/kwb" eval "$k/blur" "$k/blur/lineage/08-register-stream.cu" --config small --json
    # The worker's sandbox, as it confirmed it (the result's top-level "sandbox").
    state=$(grep -m1 -o '^  "sandbox": "[a-z]*"' "$r/$label.log" | sed 's/.*: "\(.*\)"/\1/')
    if [ "$state" != "$kind" ]; then
      note "$where-$kind: the worker did not run in $kind (its sandbox: '${state:-none reported}'): the rest is not run with $kind"
      continue
    fi
    tested=$((tested + 1))
    check "$where-$kind-gemm-bf16-11-host-launcher" bare "$dir/kwb" eval "$k/gemm-bf16" "$k/gemm-bf16/lineage/11-tma-wgmma.cu" --config small --json
    check "$where-$kind-softmax-sanitize" bare "$dir/kwb" eval "$k/softmax" --sanitize --json
  done
  [ $tested -gt 0 ] || { note "$where: no run was confirmed inside a sandbox (bwrap or unshare): nothing of issue 45 was tested from here"; status=1; }
done
rm -rf "${places[@]}"
note "issue45-bundle: exit $status"
exit $status
