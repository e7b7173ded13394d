#!/usr/bin/python3
"""A stand-in for `openocd` as a debug session's gdb server, backed by the emulated board.

Copy it beside two files: `board-dir` (the directory `agentic-hil sim start` gave the board, with its
`gdb.sock` and `qmp.sock`) and, optionally, `fake-scenario`:

  ok          listen on the `gdb_port` given, relay gdb's remote protocol to the board's stub (default)
  exit-early  print OpenOCD's "open failed" and exit 1 before the port opens
  no-port     run but never open the port
  lose-first-interrupt  serve as `ok`, but gdb's first interrupt (Ctrl-C) never reaches the board
  deaf        serve as `ok`, but no interrupt ever reaches the board, so a running core never halts

The board stub cannot run OpenOCD's monitor commands, so `qRcmd` packets are answered here:
`reset halt` resets the board through QMP and keeps it paused; `$_TARGETNAME configure -event ...`
is accepted. Everything else goes to the stub unchanged. Each run appends its arguments to
`calls.jsonl`, each monitor command to `monitor.log`, and writes its pid to `shim.pid`.
"""
import json
import os
import select
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(sys.argv[0]))
ARGS = sys.argv[1:]


def write_line(stream, text):
    # Like a real server, which ignores SIGPIPE, it outlives whoever read its output: only the
    # keeper's kill may end it when the session's process dies.
    try:
        stream.write(text + "\n")
        stream.flush()
    except OSError:
        pass


def log(text):
    write_line(sys.stderr, text)


def record_run():
    """Appends this run's arguments to `calls.jsonl` and writes its pid to `shim.pid`."""
    with open(os.path.join(HERE, "calls.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(ARGS) + "\n")
    with open(os.path.join(HERE, "shim.pid"), "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))


def listen(host, port):
    """The server socket for gdb, listening on `host`:`port`."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, port))
    server.listen(1)
    return server


def beside(name, default=""):
    try:
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            return f.read().strip() or default
    except FileNotFoundError:
        return default


def commands():
    """The `-c` commands in order."""
    found = []
    for i, arg in enumerate(ARGS):
        if arg == "-c" and i + 1 < len(ARGS):
            found.extend(part.strip() for part in ARGS[i + 1].split(";"))
    return found


def qmp(board, *requests):
    """Runs QMP commands on the board, in order; the last answer."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5)
    sock.connect(os.path.join(board, "qmp.sock"))
    stream = sock.makefile("rwb")
    stream.readline()
    answer = None
    for execute in ("qmp_capabilities",) + requests:
        stream.write((json.dumps({"execute": execute}) + "\n").encode())
        stream.flush()
        while True:
            answer = json.loads(stream.readline())
            if "return" in answer or "error" in answer:
                break
    sock.close()
    return answer


def packet(payload):
    checksum = sum(payload.encode()) & 0xFF
    return ("$%s#%02x" % (payload, checksum)).encode()


def monitor(board, command):
    """Answers one monitor command as OpenOCD would for a halted board."""
    words = command.split()
    if words[:2] == ["reset", "halt"]:
        qmp(board, "system_reset", "stop")
        return packet("OK")
    if words and words[0] in ("$_TARGETNAME", "halt", "targets"):
        if words[0] == "halt":
            qmp(board, "stop")
        return packet("OK")
    text = "shim: unknown monitor command '%s'\n" % command
    return packet("O" + text.encode().hex()) + packet("OK")


# How many of gdb's interrupts this process has lost.
LOST = [0]


def passes_interrupt(scenario):
    """Whether gdb's interrupt reaches the board under `scenario`."""
    if scenario == "deaf" or (scenario == "lose-first-interrupt" and LOST[0] == 0):
        LOST[0] += 1
        log("Info : interrupt lost")
        return False
    return True


class Relay:
    """gdb on a TCP socket, the board's stub on a unix socket; packets from gdb are parsed so
    `qRcmd` can be answered here."""

    def __init__(self, board, client):
        self.board = board
        self.client = client
        self.stub = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.stub.connect(os.path.join(board, "gdb.sock"))
        self.pending = b""
        self.scenario = beside("fake-scenario", "ok")

    def from_gdb(self, data):
        self.pending += data
        forward = b""
        while self.pending:
            if self.pending[:1] != b"$":
                cut = self.pending.find(b"$")
                cut = len(self.pending) if cut < 0 else cut
                chunk = self.pending[:cut]
                if b"\x03" in chunk and not passes_interrupt(self.scenario):
                    chunk = chunk.replace(b"\x03", b"")
                forward += chunk
                self.pending = self.pending[cut:]
                continue
            end = self.pending.find(b"#")
            if end < 0 or len(self.pending) < end + 3:
                break
            raw = self.pending[: end + 3]
            self.pending = self.pending[end + 3:]
            body = raw[1:end].decode("latin-1")
            if body.startswith("qRcmd,"):
                if forward:
                    self.stub.sendall(forward)
                    forward = b""
                command = bytes.fromhex(body[len("qRcmd,"):]).decode("utf-8", "replace")
                log("Info : monitor %s" % command)
                with open(os.path.join(HERE, "monitor.log"), "a", encoding="utf-8") as f:
                    f.write(command + "\n")
                self.client.sendall(b"+" + monitor(self.board, command))
            else:
                forward += raw
        if forward:
            self.stub.sendall(forward)

    def run(self):
        try:
            while True:
                ready, _, _ = select.select([self.client, self.stub], [], [])
                if self.client in ready:
                    data = self.client.recv(65536)
                    if not data:
                        return
                    self.from_gdb(data)
                if self.stub in ready:
                    data = self.stub.recv(65536)
                    if not data:
                        return
                    self.client.sendall(data)
        finally:
            # Closing without a detach packet leaves the board's core as it is.
            self.stub.close()
            self.client.close()


def start(say, banner, failure):
    """Records the run and says `banner`, then plays the scenarios every server fake shares:
    `exit-early` says `failure` and exits 1, `no-port` never opens its port. Returns the scenario."""
    record_run()
    say(banner)
    case = beside("fake-scenario", "ok")
    if case == "exit-early":
        for line in failure:
            say(line)
        sys.exit(1)
    if case == "no-port":
        time.sleep(3600)
        sys.exit(0)
    return case


def main():
    start(
        log,
        "Open On-Chip Debugger 0.12.0",
        ["Info : clock speed 2000 kHz", "Error: open failed"],
    )
    board = beside("board-dir")
    script = commands()
    port = next(int(c.split()[1]) for c in script if c.startswith("gdb_port "))
    host = next((c.split()[1] for c in script if c.startswith("bindto ")), "127.0.0.1")
    if "reset halt" in script:
        qmp(board, "system_reset", "stop")
    elif "halt" in script:
        qmp(board, "stop")
    log("Info : [stm32f4x.cpu] target halted")
    server = listen(host, port)
    log("Info : Listening on port %d for gdb connections" % port)
    while True:
        client, _ = server.accept()
        log("Info : accepting 'gdb' connection on tcp/%d" % port)
        Relay(board, client).run()
        log("Info : dropped 'gdb' connection")


if __name__ == "__main__":
    sys.exit(main())
