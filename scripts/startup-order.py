#!/usr/bin/env python3
"""Regenerate crates/agentic-hil/startup-order.txt: the functions the release binary runs from its
start to the `tools/list` answer (without and with a configuration), which the release link lays
out together (`--symbol-ordering-file`, decision 0026).

Usage: scripts/startup-order.py (needs valgrind: `apt-get install valgrind`). It builds the release
binary with a link map (`AHIL_LINK_MAP`), runs it under callgrind, maps every executed address to
the function section holding it, and writes one symbol a line. Then rebuild (`cargo build
--release`) for the new order to take effect. Run it after a change to start-up or the listing; a
stale file costs memory at start, never correctness (the link skips names it no longer has).
"""
import bisect
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target/release/agentic-hil")
MAP = os.path.join(ROOT, "target/release/startup-order.map")
ORDER = os.path.join(ROOT, "crates/agentic-hil/startup-order.txt")
MESSAGES = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"order","version":"0"}}}\n'
    '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
)
# lld's map: "VMA LMA Size Align Out In Symbol", columns by indentation.
MAP_LINE = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ (\s*)(\S.*)$")


def build():
    env = dict(os.environ, AHIL_LINK_MAP=MAP, CARGO_INCREMENTAL="0")
    subprocess.run(["cargo", "build", "--release", "--locked", "-p", "agentic-hil"], cwd=ROOT,
                   env=env, check=True)


def text_sections():
    """(start, end, symbol) of every function section of `.text`, sorted by address. A function's
    section is `.text.<its mangled name>` (rustc puts each function in its own section)."""
    sections, in_text = [], False
    with open(MAP) as f:
        for line in f:
            m = MAP_LINE.match(line)
            if not m:
                continue
            vma, size, indent, name = int(m[1], 16), int(m[2], 16), len(m[3]), m[4]
            if indent == 0:
                in_text = name == ".text"
                continue
            section = re.search(r":\((\.text\.[^)]+)\)$", name)
            if in_text and section and size > 0:
                symbol = re.sub(r"^\.text\.((unlikely|hot|startup|exit|split)\.)?", "", section[1])
                sections.append((vma, vma + size, symbol))
    return sorted(sections)


def executed_addresses(root, configured):
    env = {"HOME": os.path.join(root, "home"), "PATH": os.environ.get("PATH", "")}
    env["XDG_CONFIG_HOME"] = os.path.join(env["HOME"], ".config")
    env["XDG_STATE_HOME"] = os.path.join(env["HOME"], ".local/state")
    workspace = os.path.join(root, "ws")
    if configured:
        subprocess.run([BINARY, "init", "--json"], cwd=workspace, env=env,
                       stdout=subprocess.DEVNULL, check=True)
    out = os.path.join(root, f"callgrind.{int(configured)}")
    server = subprocess.Popen(["valgrind", "--tool=callgrind", "--quiet", "--dump-instr=yes",
                               "--dump-line=no", f"--callgrind-out-file={out}", BINARY, "mcp-stdio"],
                              cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    server.stdin.write(MESSAGES.encode())
    server.stdin.flush()
    for line in server.stdout:
        if json.loads(line).get("id") == 2:
            break
    # What the server runs beside the answer (its tasks settling after `initialized`) is resident
    # at that moment too; closing stdin at once would end the process before it runs.
    time.sleep(3)
    server.stdin.close()
    server.stdout.read()
    if server.wait() != 0:
        sys.exit("startup-order: the server under callgrind failed")
    return instruction_addresses(out)


def instruction_addresses(path):
    """Every instruction of the binary callgrind counted. `--dump-instr=yes` cost lines start with
    the instruction's address: absolute (0x...), relative to the previous line's (+n, -n) or the
    same (*); a `calls=` line names its target without moving that base."""
    addresses, objects, binary_object, last = set(), {}, False, 0
    with open(path) as f:
        for line in f:
            m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                if m[3]:
                    objects[m[2]] = m[3]
                if m[1] == "ob":
                    binary_object = objects.get(m[2]) == BINARY
                continue
            if not line[:1].isdigit() and line[:1] not in ("+", "-", "*"):
                continue
            position = line.split()[0]
            if position.startswith("0x"):
                last = int(position, 16)
            elif position[0] in "+-":
                last += int(position)
            elif position != "*":
                last = int(position)
            if binary_object:
                addresses.add(last)
    return addresses


def main():
    build()
    sections = text_sections()
    starts = [s[0] for s in sections]
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "home"))
        os.makedirs(os.path.join(root, "ws"))
        addresses = executed_addresses(root, False) | executed_addresses(root, True)
    executed, missed = {}, 0
    for address in sorted(addresses):
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and address < sections[i][1]:
            executed[sections[i][0]] = sections[i]
        else:
            missed += 1
    with open(ORDER, "w") as f:
        f.writelines(name + "\n" for _, _, name in sorted(executed.values()))
    size = sum(end - start for start, end, _ in executed.values())
    print(f"{len(executed)} functions, {size / 1024:.0f} KiB of code, {missed} addresses outside "
          f"any function section; wrote {os.path.relpath(ORDER, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
