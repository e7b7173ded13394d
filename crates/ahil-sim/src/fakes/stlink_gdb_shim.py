#!/usr/bin/python3
"""A stand-in for ST-LINK_gdbserver as a debug session's gdb server, backed by the emulated board.

Copy it beside `openocd_gdb_shim.py` (whose relay it reuses), `board-dir` (the directory
`agentic-hil sim start` gave the board) and, optionally, `fake-scenario`:

  ok          serve gdb on the `-p` port, relaying to the board's stub, across reconnects (default)
  exit-early  print ST-LINK_gdbserver's "No ST-LINK detected" and exit 1 before the port opens
  no-port     run but never open the port
  lose-first-interrupt, deaf  serve as `ok`, losing gdb's interrupts as `openocd_gdb_shim.py` says
  all-interfaces  serve as `ok`, but listen on 0.0.0.0 (as the real server may: it has no bind option)

ST-LINK_gdbserver's monitor commands are answered here: `reset` resets the board through QMP and
keeps it paused, `halt` pauses it. When gdb's connection ends the board is resumed, the worst a real
server may do, so only a server killed before gdb leaves keeps the core halted. Each run appends
its arguments to `calls.jsonl`, each monitor command to `monitor.log`, and writes its pid to
`shim.pid`.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(sys.argv[0]))
sys.path.insert(0, HERE)

import openocd_gdb_shim as shim  # noqa: E402

ARGS = sys.argv[1:]


def say(text):
    # Unlike OpenOCD, ST-LINK_gdbserver talks on stdout.
    shim.write_line(sys.stdout, text)


def monitor(board, command):
    """Answers one monitor command as ST-LINK_gdbserver would for a halted board."""
    words = command.split()
    if words == ["reset"]:
        shim.qmp(board, "system_reset", "stop")
        return shim.packet("OK")
    if words == ["halt"]:
        shim.qmp(board, "stop")
        return shim.packet("OK")
    text = "Unknown monitor command '%s'\n" % command
    return shim.packet("O" + text.encode().hex()) + shim.packet("E01")


def main():
    case = shim.start(
        say,
        "STMicroelectronics ST-LINK GDB server. Version 7.10.0",
        [
            "Error in initializing ST-LINK device.",
            "Reason: No ST-LINK detected! Please connect ST-LINK and restart the debug session.",
        ],
    )
    board = shim.beside("board-dir")
    port = int(ARGS[ARGS.index("-p") + 1])
    shim.monitor = monitor
    server = shim.listen("0.0.0.0" if case == "all-interfaces" else "127.0.0.1", port)
    say("Waiting for debugger connection...")
    while True:
        client, _ = server.accept()
        say("Debugger connected")
        shim.Relay(board, client).run()
        # The worst a real server may do when gdb leaves: let the core run.
        shim.qmp(board, "cont")
        if "-e" not in ARGS:
            return 0
        say("Waiting for debugger connection...")


if __name__ == "__main__":
    sys.exit(main())
