#!/usr/bin/python3
"""A scripted stand-in for openocd, pyocd, STM32_Programmer_CLI and esptool.

The backend is chosen by this file's name (copy it to `openocd.py`, `pyocd.py`,
`STM32_Programmer_CLI.py` or `esptool.py`); the scenario by the file `fake-scenario` beside it (default `ok`).
Every call appends its arguments as one JSON line to `calls.jsonl` beside it, so tests can check
the exact command lines. Output replays what the real tools print for each success and failure class.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(sys.argv[0]))
NAME = os.path.basename(sys.argv[0]).lower()
ARGS = sys.argv[1:]


def scenario():
    try:
        with open(os.path.join(HERE, "fake-scenario"), encoding="utf-8") as f:
            return f.read().strip() or "ok"
    except FileNotFoundError:
        return "ok"


def out(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def err(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def write_pid(name, pid):
    # Written whole and renamed, so a reader never sees a half-written number.
    path = os.path.join(HERE, name)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(pid))
    os.rename(path + ".tmp", path)


def board_reset():
    """Notes a reset that lets the board run, one line each, for a test's board to boot on.

    Where a board is listening (it made `board-booted`), waits until it booted, so its boot text
    is printed while this tool still runs, as a real board prints it during the reset."""
    with open(os.path.join(HERE, "board-resets"), "a", encoding="utf-8") as f:
        f.write("reset\n")
    booted = os.path.join(HERE, "board-booted")
    if not os.path.exists(booted):
        return
    with open(os.path.join(HERE, "board-resets"), encoding="utf-8") as f:
        resets = len(f.readlines())
    end = time.time() + 5
    while time.time() < end:
        with open(booted, encoding="utf-8") as f:
            if len(f.readlines()) >= resets:
                return
        time.sleep(0.01)


def hang(with_grandchild):
    if with_grandchild:
        pid = os.fork()
        if pid == 0:
            # The grandchild stays in the process group and outlives its parent unless the group dies.
            time.sleep(3600)
            os._exit(0)
        write_pid("grandchild.pid", pid)
    write_pid("child.pid", os.getpid())
    time.sleep(3600)
    sys.exit(0)


def markers(script):
    """The echo markers an OpenOCD script would print, in order."""
    found = []
    for segment in script.split(";"):
        segment = segment.strip()
        if segment.startswith("echo "):
            found.append(segment[5:].strip().strip('"').replace('\\"', '"'))
    return found


# The OpenOCD scenarios that end without finishing the script: whether the init marker was printed
# first, the lines OpenOCD prints, and its exit code.
OPENOCD_ENDINGS = {
    "no-marker": (False, ["Info : clock speed 2000 kHz"], 0),
    "no-probe": (False, ["Info : clock speed 2000 kHz", "Error: open failed"], 1),
    "rejected": (False, ['invalid command name "reset"'], 1),
    "target-absent": (False, ["Error: unable to connect to the target"], 1),
    "verify-fail": (True, ["Error: checksum mismatch - attempting binary compare",
                           "Error: verify failed"], 1),
    "flash-fail": (True, ["Error: failed erasing sectors 0 to 3", "Error: flash_erase returned -4"], 1),
    "write-fail": (True, ["Error: error writing to flash at address 0x08000000 at offset 0x00000000",
                          "** Programming Failed **"], 1),
    "reset-fail": (True, ["Error: timed out while waiting for target halted",
                          "Error: reset halt failed"], 1),
}


def openocd(case):
    if ARGS == ["--version"]:
        err("Open On-Chip Debugger 0.12.0")
        err("Licensed under GNU GPL v2")
        return 0
    script = ARGS[-1] if ARGS else ""
    interface = ARGS[1] if len(ARGS) > 1 else ""
    echoes = markers(script)
    err("Open On-Chip Debugger 0.12.0")
    if case == "ok":
        for marker in echoes:
            err(marker)
        if "reset;" in script or "reset run" in script:
            board_reset()
        err("shutdown command invoked")
        return 0
    if case == "warnings":
        err("Error: auto0.tap: IR capture error; saw 0x0003 not 0x0001")
        for marker in echoes:
            err(marker)
        return 0
    if case == "bad-interface":
        err("embedded:startup.tcl:28: Error: Can't find %s" % interface)
        return 1
    if case in OPENOCD_ENDINGS:
        after_init, lines, code = OPENOCD_ENDINGS[case]
        if after_init:
            err(echoes[0] if echoes else "")
        for line in lines:
            err(line)
        return code
    err("fake: unknown scenario " + case)
    return 2


# The pyocd scenarios that end with one line on stderr and exit 1: the subcommand or first word of
# `--command` the line answers (None: any call), and the line.
PYOCD_FAILURES = {
    "target-invalid": (None, "0000600 C Target type nosuchchip not recognized. Use 'pyocd list --targets' to see "
                             "currently available target types. See <https://pyocd.io/docs/target_support.html> "
                             "for how to install additional target support. [__main__]"),
    "odd-failure": (None, "0000500 C 'NoneType' object has no attribute 'memory_map' [__main__]"),
    "not-connected": (None, "0000712 C Error connecting to target: no ACK received. [__main__]"),
    "verify-fail": ("flash", "0001200 E Flash verify failed at 0x08000100 [__main__]"),
    "reset-fail": ("reset", "0000800 E reset failed: target did not respond [__main__]"),
}


def pyocd(case):
    if ARGS == ["--version"]:
        out("0.46.0")
        return 0
    sub = ARGS[0] if ARGS else ""
    if sub == "json":
        if case == "bad-json":
            out("not json")
            return 0
        if "--targets" in ARGS:
            out(json.dumps({"pyocd_version": "0.46.0", "status": 0, "targets": [
                {"name": "stm32f439xi", "vendor": "STMicroelectronics", "part_number": "STM32F439xI",
                 "source": "builtin"},
                {"name": "cortex_m", "vendor": "Generic", "part_number": "CoreSightTarget",
                 "source": "builtin"}]}))
            return 0
        boards = {
            "two-probes": ["0670FF5154", "0670FF5154AA"],
            "one-probe": ["0670FF515455827267135939"],
            "no-probe": [],
        }.get(case, ["0670FF515455827267135939", "E6614103E7"])
        out(json.dumps({"pyocd_version": "0.46.0", "status": 0,
                        "boards": [{"unique_id": uid} for uid in boards]}))
        return 0
    command = ARGS[ARGS.index("--command") + 1] if "--command" in ARGS else ""
    if case == "no-probe":
        out("No connected debug probes")
        return 3 if sub == "commander" else 1
    if case in PYOCD_FAILURES and PYOCD_FAILURES[case][0] in (None, sub, command.split(" ")[0]):
        err(PYOCD_FAILURES[case][1])
        return 1
    if case == "noisy" and sub == "flash":
        out("[==================================================] 100%")
        err("0000900 W flash write failed once, retrying [__main__]")
        return 0
    if case in ("ok", "two-probes", "reset-fail", "verify-fail", "noisy"):
        if command == "reset":
            board_reset()
        if sub == "flash":
            out("[==================================================] 100%")
            out("0000812 I Erased 16384 bytes (1 sector), programmed 16384 bytes (16 pages) [loader]")
        return 0
    err("fake: unknown scenario " + case)
    return 2


STLINK_SN = "ST-LINK SN  : 066DFF535254887767184038"
STLINK_DEVICE = "Device name : STM32F405xx/F407xx/F415xx/F417xx"

# The STM32_Programmer_CLI scenarios that end with a fixed answer: the option the call must carry
# for it (None: any call), what the CLI prints, and its exit code.
STLINK_ENDINGS = {
    "no-probe": (None, ["Error: No ST-Link detected!"], 1),
    "no-target": (None, [STLINK_SN, "Error: No STM32 target found! If your product embeds Debug "
                                    "Authentication, please perform a discovery"], 1),
    "unconfirmed": (None, [STLINK_SN], 0),
    "erase-refused": ("-w", [STLINK_SN, STLINK_DEVICE, "Erasing memory corresponding to segment 0:",
                             "Error: failed to erase memory"], 1),
    "erase-underway": ("-w", [STLINK_SN, "Download in progress:",
                              "[=====                                             ]  10%",
                              "Error: failed to erase memory"], 1),
    "verify-fail": ("-w", ["Download in progress:", "File download complete",
                           "Error: Download verification failed"], 1),
}


# What `-l` prints: the one probe the fake has, unless the scenario says otherwise.
STLINK_LISTING = ["=====  STLink Interface  =====", "-------- Connected ST-LINK Probes List --------",
                  "ST-Link Probe 0 :", "   ST-LINK SN  : 066DFF535254887767184038", "   ST-LINK FW  : V2J45M31"]
STLINK_LISTINGS = {"no-probe": ["No ST-Link detected!"], "bad-list": ["garbage"]}


def stlink(case):
    if ARGS == ["--version"]:
        out("      -------------------------------------------------------------------")
        out("                        STM32CubeProgrammer v2.17.0")
        out("      -------------------------------------------------------------------")
        out("STM32CubeProgrammer version: 2.17.0 ")
        return 0
    if "-l" in ARGS:
        for line in STLINK_LISTINGS.get(case, STLINK_LISTING):
            out(line)
        return 0
    if case in STLINK_ENDINGS and STLINK_ENDINGS[case][0] in ARGS + [None]:
        _, lines, code = STLINK_ENDINGS[case]
        for line in lines:
            out(line)
        return code
    if case == "hex-short" and "-r" in ARGS:
        # Claims the read but leaves a HEX file that covers none of the requested bytes.
        with open(ARGS[ARGS.index("-r") + 3], "w", encoding="ascii") as f:
            f.write(":00000001FF\n")
        out("Data read successfully")
        return 0
    if case in ("ok", "erase-refused", "erase-underway", "verify-fail"):
        out(STLINK_SN)
        out(STLINK_DEVICE)
        if "-w" in ARGS:
            out("Memory Programming ...")
            out("File download complete")
            out("Download verified successfully ")
        if "-rst" in ARGS:
            board_reset()
            out("MCU Reset")
            out("Software reset is performed")
        if "-halt" in ARGS:
            out("Core halted")
        if "-r" in ARGS:
            at = ARGS.index("-r")
            address, size, path = int(ARGS[at + 1], 16), int(ARGS[at + 2]), ARGS[at + 3]
            data = bytes(range(size % 256))[:size]
            record = bytes([len(data), (address >> 8) & 0xFF, address & 0xFF, 0]) + data
            checksum = (-sum(record)) & 0xFF
            with open(path, "w", encoding="ascii") as f:
                f.write(":02000004%04X%02X\n" % (address >> 16, (-(6 + (address >> 24) + ((address >> 16) & 0xFF))) & 0xFF))
                f.write(":" + record.hex().upper() + "%02X\n" % checksum)
                f.write(":00000001FF\n")
            out("Reading data...")
            out("Data read successfully")
        return 0
    err("fake: unknown scenario " + case)
    return 2

ESPTOOL_BANNER = "esptool v5.5.0"


def esptool_connected(port):
    out(ESPTOOL_BANNER)
    out("Connecting....")
    out("Connected to ESP32 on " + port + ":")
    out("Chip type:          ESP32-D0WD-V3 (revision v3.1)")
    out("Features:           Wi-Fi, BT, Dual Core, 240MHz, Vref calibration in eFuse")
    out("Crystal frequency:  40MHz")
    out("MAC:                24:0a:c4:12:34:56")
    out("")


def esptool_after(after):
    out("")
    if after == "hard-reset":
        out("Hard resetting via RTS pin...")
    else:
        out("Staying in bootloader.")


def esptool_unconnected(port):
    """The esptool scenarios that never reach the chip: what it prints after its banner on stdout,
    then on stderr."""
    return {
        "no-port": (["Serial port " + port + ":", ""], [
            "A fatal error occurred: Could not open " + port + ", the port is busy or doesn't exist.",
            "([Errno 2] could not open port " + port + ": [Errno 2] No such file or directory: '" + port + "')",
            "",
            "Hint: Check if the port is correct and ESP connected",
        ]),
        "no-chip": (["Connecting......................................", ""], [
            "A fatal error occurred: Failed to connect to ESP32: No serial data received.",
            "For troubleshooting steps visit: https://docs.espressif.com/projects/esptool/en/latest/troubleshooting.html",
        ]),
        "wrong-chip": (["Connecting....", ""], [
            "A fatal error occurred: This chip is ESP32-S3, not ESP32. Wrong chip argument?",
        ]),
    }


def esptool(case):
    """esptool 5: `version`, then `--chip= --port= [--baud=] --before= --after= <command> ...`."""
    if ARGS == ["version"]:
        if case == "old-version":
            out("esptool.py v4.8.1")
            out("4.8.1")
        else:
            out(ESPTOOL_BANNER)
            out("5.5.0")
        return 0
    opts = dict(a[2:].split("=", 1) for a in ARGS if a.startswith("--") and "=" in a)
    port = opts.get("port", "?")
    after = opts.get("after", "hard-reset")
    writing = "write-flash" in ARGS
    if case == "connect-hang":
        out(ESPTOOL_BANNER)
        out("Connecting....")
        hang(False)
    unconnected = esptool_unconnected(port)
    if case in unconnected:
        stdout, stderr = unconnected[case]
        out(ESPTOOL_BANNER)
        for line in stdout:
            out(line)
        for line in stderr:
            err(line)
        return 2
    if case == "unconfirmed":
        esptool_connected(port)
        return 0
    if case == "garbled":
        esptool_connected(port)
        err("A fatal error occurred: Invalid reset mode requested by a plugin")
        return 2
    esptool_connected(port)
    if writing:
        out("Configuring flash size...")
        out("Flash will be erased from 0x00010000 to 0x00010fff...")
        if case == "write-fail":
            out("")
            err("A fatal error occurred: Packet content transfer stopped (received 8 bytes)")
            return 2
        out("Wrote 256 bytes (211 compressed) at 0x00010000 in 0.1 seconds (27.1 kbit/s).")
        if case == "verify-fail":
            out("")
            err("A fatal error occurred: MD5 of file does not match data in flash!")
            return 2
        out("Hash of data verified.")
        if after == "hard-reset":
            board_reset()
        esptool_after(after)
        return 0
    if case == "ok":
        out("Flash Memory Information:")
        out("=========================")
        out("Manufacturer: 20")
        out("Device: 4016")
        out("Detected flash size: 4MB")
        esptool_after(after)
        return 0
    if case in ("verify-fail", "write-fail"):
        out("Detected flash size: 4MB")
        esptool_after(after)
        return 0
    err("fake: unknown scenario " + case)
    return 2


def main():
    case = scenario()
    with open(os.path.join(HERE, "calls.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(ARGS) + "\n")
    if case == "hang":
        hang(False)
    if case == "fork-hang":
        hang(True)
    if "openocd" in NAME:
        return openocd(case)
    if "pyocd" in NAME:
        return pyocd(case)
    if "stm32" in NAME:
        return stlink(case)
    if "esptool" in NAME:
        return esptool(case)
    err("fake: cannot tell which tool to be from " + NAME)
    return 2


if __name__ == "__main__":
    sys.exit(main())
