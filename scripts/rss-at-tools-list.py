#!/usr/bin/env python3
"""Resident memory of the release binary at its `tools/list` answer, without and with a configuration.

Usage: scripts/rss-at-tools-list.py [BINARY ...] (default target/release/agentic-hil); AHIL_RSS_RUNS
starts each (default 5). Prints the medians of VmHWM / RssAnon / RssFile (MiB, read from
/proc/<pid>/status the moment the answer arrives) and of the start-to-answer time (ms). Not a test:
the figures in docs/PERFORMANCE.md's RSS notes come from it.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MESSAGES = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"rss","version":"0"}}}\n'
    '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
)
FIELDS = ("VmHWM", "RssAnon", "RssFile")


def environment(root):
    home = os.path.join(root, "home")
    return {
        "HOME": home,
        "PATH": os.environ.get("PATH", ""),
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_STATE_HOME": os.path.join(home, ".local/state"),
    }


def once(binary, root):
    env = environment(root)
    workspace = os.path.join(root, "ws")
    start = time.perf_counter()
    child = subprocess.Popen([binary, "mcp-stdio"], cwd=workspace, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    child.stdin.write(MESSAGES.encode())
    child.stdin.flush()
    for line in child.stdout:
        if json.loads(line).get("id") == 2:
            break
    elapsed = (time.perf_counter() - start) * 1000
    status = {}
    with open(f"/proc/{child.pid}/status") as f:
        for row in f:
            key, _, value = row.partition(":")
            if key in FIELDS:
                status[key] = int(value.split()[0]) / 1024
    child.stdin.close()
    child.wait()
    return [status[k] for k in FIELDS] + [elapsed]


def measure(binary, configured, runs):
    with tempfile.TemporaryDirectory() as root:
        for sub in ("home", "ws"):
            os.makedirs(os.path.join(root, sub))
        if configured:
            subprocess.run([binary, "init", "--json"], cwd=os.path.join(root, "ws"),
                           env=environment(root), stdout=subprocess.DEVNULL, check=True)
        once(binary, root)  # warm page cache
        samples = [once(binary, root) for _ in range(runs)]
    return [statistics.median(column) for column in zip(*samples)]


def main():
    binaries = sys.argv[1:] or ["target/release/agentic-hil"]
    runs = int(os.environ.get("AHIL_RSS_RUNS", "5"))
    print(f"median of {runs} starts: VmHWM / RssAnon / RssFile (MiB), start to tools/list (ms)")
    for binary in binaries:
        for configured in (False, True):
            hwm, anon, file, ms = measure(os.path.abspath(binary), configured, runs)
            label = "with config" if configured else "no config  "
            print(f"{binary}  {label}  {hwm:5.1f} / {anon:4.1f} / {file:5.1f}  {ms:6.1f} ms")


if __name__ == "__main__":
    main()
