#!/usr/bin/python3
"""A stand-in for `openocd` as an RTT server: it takes OpenOCD's arguments, answers `rtt setup`,
`rtt start` and `rtt server start <port> <channel>` as OpenOCD 0.12 does, and serves each channel
on its port with a small firmware of its own (no target behind it).

Copy it beside an optional `fake-scenario` file:

  ok        bind every rtt server to the `bindto` address; each client first gets
            "boot ok (openocd rtt, channel N)\n", then every byte it sends is echoed back as
            "echo: <bytes>" (what the firmware's down channel does)   (default)
  exposed   ignore `bindto` and listen on every interface (0.0.0.0)
  exit-early  print OpenOCD's "open failed" and exit 1 before any port opens

Each run appends its arguments to `calls.jsonl` and writes its pid to `fake.pid`.
"""
import json
import os
import select
import socket
import sys

HERE = os.path.dirname(os.path.abspath(sys.argv[0]))
ARGS = sys.argv[1:]


def log(text):
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except OSError:
        pass


def scenario():
    try:
        with open(os.path.join(HERE, "fake-scenario"), encoding="utf-8") as f:
            return f.read().strip() or "ok"
    except OSError:
        return "ok"


def commands():
    return [ARGS[i + 1] for i, arg in enumerate(ARGS[:-1]) if arg == "-c"]


def main():
    with open(os.path.join(HERE, "calls.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(ARGS) + "\n")
    with open(os.path.join(HERE, "fake.pid"), "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))
    mode = scenario()
    if mode == "exit-early":
        log("Error: open failed")
        sys.exit(1)
    host, setup, started, servers = "0.0.0.0", None, False, []
    for command in commands():
        words = command.split()
        if words[:1] == ["bindto"]:
            host = words[1]
        elif words[:2] == ["rtt", "setup"]:
            setup = (int(words[2], 0), int(words[3], 0))
        elif words[:2] == ["rtt", "start"]:
            if setup is None:
                log("Error: rtt: Control block search is not configured")
                sys.exit(1)
            started = True
            log("Info : rtt: Searching for control block 'SEGGER RTT'")
            log("Info : rtt: Control block found at 0x%08x" % (setup[0] + 0x70))
        elif words[:3] == ["rtt", "server", "start"]:
            if not started:
                log("Error: rtt: not started")
                sys.exit(1)
            port, channel = int(words[3]), int(words[4])
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("0.0.0.0" if mode == "exposed" else host, port))
            server.listen(4)
            servers.append((server, channel))
            log("Info : Listening on port %d for RTT connections" % port)
    clients = {}
    while True:
        readable, _, _ = select.select([s for s, _ in servers] + list(clients), [], [])
        for sock in readable:
            channel = dict(servers).get(sock)
            if channel is not None:
                client, _ = sock.accept()
                clients[client] = channel
                try:
                    client.sendall(b"boot ok (openocd rtt, channel %d)\n" % channel)
                except OSError:
                    pass
                continue
            # A client gone before it read its greeting (the gate's readiness probe connects and
            # closes at once) answers with a reset: that client ends, the server goes on, as
            # OpenOCD's does.
            try:
                data = sock.recv(4096)
                if data:
                    sock.sendall(b"echo: " + data)
                    continue
            except OSError:
                pass
            del clients[sock]
            sock.close()


main()
