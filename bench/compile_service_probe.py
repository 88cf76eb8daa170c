#!/usr/bin/env python3
"""What each of the compile service's restrictions costs a compile (issue 17).

Starts `kwb-worker --compile-service` directly (no namespaces: --sandbox none), once per
configuration -- as shipped; without its memory limit; with an address-space limit (RLIMIT_AS,
through util-linux's prlimit) instead; with TMPDIR outside its folder; without the fence,
seccomp, any -- and sends each the same distinct-variant compiles of one
source. Prints, per configuration, the median round trip and the service's own figures from its
replies ("work": wall and CPU time inside it, page faults, context switches), as a table, and
writes JSON. No GPU needed; NVRTC must be loadable (the bundle's env.sh).
  compile_service_probe.py WORKER SOURCE KERNEL [--runs N] [--arch sm_90] [--json FILE]
"""
import argparse, base64, json, os, statistics, subprocess, sys, tempfile, time

GIB = 1 << 30
# (name, the service's own arguments, an address-space limit it inherits through prlimit or None,
#  TMPDIR left at /tmp instead of the private folder)
CONFIGS = [
    ("as shipped", [], None, False),
    ("no memory limit", ["--memory-limit-mb", "0"], None, False),
    ("address space 4 GiB", ["--memory-limit-mb", "0"], 4 * GIB, False),
    ("address space 16 GiB", ["--memory-limit-mb", "0"], 16 * GIB, False),
    ("TMPDIR behind fence", [], None, True),
    ("TMPDIR /tmp, no fence", ["--no-fence"], None, True),
    ("no fence", ["--no-fence"], None, False),
    ("no seccomp", ["--no-seccomp"], None, False),
    ("none of them", ["--no-fence", "--no-seccomp", "--memory-limit-mb", "0", "--cpu-limit-s", "0"], None, False),
]


def probe(worker, source, kernel, arch, runs, extra, address_space, tmp_outside):
    with tempfile.TemporaryDirectory(prefix="kwb-probe-") as private:
        args = [worker, "--compile-service", "--sandbox", "none", "--sandbox-note", "probe",
                "--private-dir", private, "--memory-limit-mb", "4096", "--cpu-limit-s", "120",
                "--output-limit-mb", "256"] + extra
        if address_space:
            args = ["prlimit", f"--as={address_space}", "--"] + args
        # As the client starts it (core/sandbox/worker_sandbox.cpp): TMPDIR is the private folder,
        # unless this configuration leaves it at /tmp (which the fence then hides).
        env = dict(os.environ)
        env.pop("TMPDIR", None)
        if not tmp_outside:
            env["TMPDIR"] = private
            env["CUDA_CACHE_PATH"] = os.path.join(private, "cuda-cache")
        started = time.monotonic()
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env)
        hello = json.loads(p.stdout.readline())
        startup = time.monotonic() - started
        rows = []
        for i in range(runs + 1):
            request = {"id": i + 1, "target": "cubin", "time_limit_ms": 120000,
                       "request": {"source_base64": base64.b64encode(source.encode()).decode(),
                                   "source_name": "probe.cu", "arch": arch,
                                   "defines": [["KWB_PROBE_VARIANT", str(os.getpid() * 1000 + i)]],
                                   "expected_kernels": [kernel]}}
            t = time.monotonic()
            p.stdin.write(json.dumps(request) + "\n")
            reply = json.loads(p.stdout.readline())
            trip = time.monotonic() - t
            ok = reply.get("outcome", {}).get("result", {}).get("ok", False)
            if i and ok:
                rows.append(dict(reply.get("work", {}), round_trip_s=trip))
            elif not ok and i:
                print("  compile failed:", json.dumps(reply)[:300], file=sys.stderr)
        # What the service left in its folder (NVRTC's own files among them), before it ends.
        files = []
        for root, _, names in os.walk(private):
            for n in names:
                path = os.path.join(root, n)
                try:
                    files.append((os.path.relpath(path, private), os.path.getsize(path)))
                except OSError:
                    pass
        p.stdin.close()
        p.wait(timeout=30)
        return hello, startup, rows, files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("worker"); ap.add_argument("source"); ap.add_argument("kernel")
    ap.add_argument("--runs", type=int, default=8); ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--json")
    a = ap.parse_args()
    source = open(a.source).read()
    med = lambda rows, k: statistics.median(r.get(k, float("nan")) for r in rows) if rows else float("nan")
    out = []
    print(f"{'configuration':<22} {'start s':>8} {'trip s':>8} {'inside s':>9} {'cpu s':>7} {'sys s':>7} {'faults':>8} {'vol sw':>7} {'invol sw':>8}  fence")
    for name, extra, address_space, tmp_outside in CONFIGS:
        hello, startup, rows, files = probe(a.worker, source, a.kernel, a.arch, a.runs, extra, address_space, tmp_outside)
        m = {k: med(rows, k) for k in ("round_trip_s", "wall_s", "cpu_s", "sys_s", "minor_faults", "voluntary_switches", "involuntary_switches")}
        print(f"{name:<22} {startup:8.3f} {m['round_trip_s']:8.3f} {m['wall_s']:9.3f} {m['cpu_s']:7.3f} {m['sys_s']:7.3f} "
              f"{m['minor_faults']:8.0f} {m['voluntary_switches']:7.0f} {m['involuntary_switches']:8.0f}  {hello.get('fence', '')[:60]}")
        big = sorted(files, key=lambda f: -f[1])[:3]
        if big:
            print(f"{'':<22} files left in the private folder: " + ", ".join(f"{n} ({s} B)" for n, s in big))
        out.append({"configuration": name, "args": extra, "address_space_limit": address_space,
                    "tmpdir_outside": tmp_outside, "files": files, "startup_s": startup, "compiles": len(rows),
                    "medians": m, "fence": hello.get("fence"), "sandbox": hello.get("sandbox"), "runs": rows})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"program": "compile_service_probe.py", "arch": a.arch, "source": a.source, "configurations": out}, f, indent=1)


if __name__ == "__main__":
    main()
