#!/usr/bin/env bash
# Installs what the demo and the tests need on a fresh Debian machine. Safe to run again: it only
# installs what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
  echo "setup: unknown option $arg (it takes none)" >&2; exit 2
done
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"

missing=()
# A C compiler for crates that build C; a machine may already have one without Debian's package.
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
# A machine may bring its own Python (pyenv); Debian's is needed only when venv is absent.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3 python3-venv python3-pip)
# The tests' backend fakes are scripts whose shebang names Debian's interpreter by its absolute path
# (a gate never finds a program through PATH, so neither do its fakes).
[ -x /usr/bin/python3 ] || missing+=(python3)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The simulated bench: QEMU's Cortex-M boards, gdb for the GDB/MI debug path, and the cross compiler
# that rebuilds firmware/ (a test checks the committed images against a rebuild). Recommends stay
# out: QEMU's pull in a desktop (GTK, gstreamer, mesa).
sim_missing=()
command -v gdb-multiarch >/dev/null 2>&1 || sim_missing+=(gdb-multiarch)
# `ip` at a fixed system path: SocketCAN buses read the kernel's link report with it (never via PATH).
[ -x /sbin/ip ] || [ -x /usr/sbin/ip ] || [ -x /bin/ip ] || [ -x /usr/bin/ip ] || sim_missing+=(iproute2)
# tmux: the end-to-end test of `agentic-hil watch` reads its live screen from a detached pane.
command -v tmux >/dev/null 2>&1 || sim_missing+=(tmux)
command -v arm-none-eabi-gcc >/dev/null 2>&1 || sim_missing+=(gcc-arm-none-eabi)
command -v make >/dev/null 2>&1 || sim_missing+=(make)
if ((${#sim_missing[@]})); then
  echo "setup: installing ${sim_missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${sim_missing[@]}" >/dev/null
fi
if ! command -v qemu-system-arm >/dev/null 2>&1; then
  # An image may carry qemu-utils from bookworm-backports; the stock qemu-system-common conflicts with
  # it and apt would remove it. Then take qemu-system-arm from backports as well, through a private
  # sources list so /etc/apt stays as the image made it.
  $sudo apt-get update -qq
  # The plan goes through a variable: under pipefail, `grep -q` closing the pipe early could turn a
  # conflict into a silent "no conflict" and remove qemu-utils after all.
  plan=$(apt-get install -s --no-install-recommends qemu-system-arm 2>/dev/null || true)
  if grep -q '^Remv ' <<<"$plan"; then
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    bpo=$(mktemp -d)
    trap '$sudo rm -rf "$bpo"' EXIT
    chmod 755 "$bpo"  # apt downloads as _apt and must reach the lists
    mkdir -p "$bpo/lists/partial" "$bpo/parts"
    # The machine's own sources, plus backports from the same mirror with the same components (a
    # host behind a local mirror or proxy keeps using it); /etc/apt itself is left as it is.
    cp /etc/apt/sources.list "$bpo/sources.list" 2>/dev/null || : >"$bpo/sources.list"
    find /etc/apt/sources.list.d -maxdepth 1 \( -name '*.list' -o -name '*.sources' \) \
      -exec cp {} "$bpo/parts/" \; 2>/dev/null || true
    python3 - "$codename" "$bpo/parts/agentic-hil-backports.sources" <<'PY'
import glob, re, sys
codename, out = sys.argv[1], sys.argv[2]
stanzas = []
for path in glob.glob("/etc/apt/sources.list.d/*.sources"):
    for block in re.split(r"\n\s*\n", open(path).read()):
        fields = {}
        for line in block.splitlines():
            if line.startswith("#") or ":" not in line or line[0].isspace():
                continue
            key, value = line.split(":", 1)
            fields[key.strip().lower()] = value.strip()
        if fields.get("enabled", "yes").lower() == "no":
            continue
        stanzas.append(fields)
one_line = ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.list")
for path in one_line:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        match = re.match(r"\s*deb\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s+(.*)", line)
        if match:
            options, uri, suite, components = match.groups()
            fields = {"types": "deb", "uris": uri, "suites": suite, "components": components}
            signed = re.search(r"signed-by=(\S+)", options or "")
            if signed:
                fields["signed-by"] = signed.group(1)
            stanzas.append(fields)
debs = [f for f in stanzas if "deb" in f.get("types", "").split()]
if any(codename + "-backports" in f.get("suites", "").split() for f in debs):
    sys.exit(0)  # backports is configured already
main = [f for f in debs if codename in f.get("suites", "").split()]
if not main:
    sys.exit("setup: no apt source serves " + codename + "; add one for its backports by hand")
with open(out, "w") as sink:
    for f in main:
        sink.write("Types: deb\nURIs: %s\nSuites: %s-backports\nComponents: %s\n"
                   % (f["uris"], codename, f.get("components", "main")))
        if "signed-by" in f:
            sink.write("Signed-By: %s\n" % f["signed-by"])
        sink.write("\n")
PY
    private=(-o "Dir::Etc::sourcelist=$bpo/sources.list" -o "Dir::Etc::sourceparts=$bpo/parts"
      -o "Dir::State::lists=$bpo/lists")
    echo "setup: installing qemu-system-arm from $codename-backports (keeps the installed qemu-utils)"
    $sudo apt-get "${private[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get "${private[@]}" install -y -qq --no-install-recommends \
      -t "$codename-backports" qemu-system-arm >/dev/null
  else
    echo "setup: installing qemu-system-arm"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends qemu-system-arm >/dev/null
  fi
fi

# Real probe tools for their no-hardware paths (no probe, bad script, the dummy adapter): Debian's OpenOCD,
# and pyOCD from PyPI (Debian's python3-pyocd is far too old) in its own venv under target/.
if ! command -v openocd >/dev/null 2>&1; then
  echo "setup: installing openocd"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends openocd >/dev/null
fi
pyocd_venv=target/pyocd-venv
if [ ! -x "$pyocd_venv/bin/pyocd" ]; then
  echo "setup: installing pyocd 0.46.0 into $pyocd_venv"
  python3 -m venv "$pyocd_venv"
  "$pyocd_venv/bin/pip" install -q --disable-pip-version-check pyocd==0.46.0
fi
# esptool 5 (the only major the esptool backend reads) for its version and no-device paths.
esptool_venv=target/esptool-venv
if [ ! -x "$esptool_venv/bin/esptool" ]; then
  echo "setup: installing esptool 5.5.0 into $esptool_venv"
  python3 -m venv "$esptool_venv"
  "$esptool_venv/bin/pip" install -q --disable-pip-version-check esptool==5.5.0
fi
# labgrid 26.0.1 for its coordinator (and its client, which the tests use as "another lab user").
labgrid_venv=target/labgrid-venv
if [ ! -x "$labgrid_venv/bin/labgrid-coordinator" ]; then
  echo "setup: installing labgrid 26.0.1 into $labgrid_venv"
  python3 -m venv "$labgrid_venv"
  "$labgrid_venv/bin/pip" install -q --disable-pip-version-check labgrid==26.0.1
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust stable (rustup) and run again" >&2
  exit 1
fi

# The reference implementation (Python, 0.25.0) runs beside ours in the compatibility tests and the
# benchmarks. It lives under target/ so a clean clone gets its own.
ref=target/reference-venv
if [ ! -x "$ref/bin/agentic-hil" ]; then
  echo "setup: installing the reference agentic-hil 0.25.0 into $ref"
  python3 -m venv "$ref"
  "$ref/bin/pip" install -q --disable-pip-version-check agentic-hil==0.25.0
fi

# The pytest plugin's suite: pytest and python/pytest-agentic-hil, installed editable so the suite
# always runs this checkout's plugin.
pyt=target/pytest-venv
if ! "$pyt/bin/python" - >/dev/null 2>&1 <<'PY'
import pathlib, pytest, pytest_agentic_hil
assert pytest.__version__ == "8.4.2"
assert pathlib.Path(pytest_agentic_hil.__file__).resolve().is_relative_to(pathlib.Path("python").resolve())
PY
then
  echo "setup: installing pytest 8.4.2 and python/pytest-agentic-hil into $pyt"
  python3 -m venv "$pyt"
  "$pyt/bin/pip" install -q --disable-pip-version-check pytest==8.4.2 -e python/pytest-agentic-hil
fi

# The MCP Inspector CLI (npm, pinned with its whole tree in scripts/inspector/package-lock.json): an
# MCP client nobody here wrote, for the black-box protocol test in both eras. Node and npm come from
# the machine, else Debian's. The test runs the node recorded here by absolute path.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing nodejs and npm"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
inspector=target/inspector
if ! cmp -s scripts/inspector/package-lock.json "$inspector/package-lock.json" \
  || [ ! -f "$inspector/node_modules/@modelcontextprotocol/inspector/package.json" ]; then
  echo "setup: installing the MCP Inspector 2.12.0 into $inspector"
  mkdir -p "$inspector"
  cp scripts/inspector/package.json scripts/inspector/package-lock.json "$inspector/"
  # --ignore-scripts: no install hook runs; the CLI needs none (native parts are prebuilt packages).
  (cd "$inspector" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null)
fi
readlink -f "$(command -v node)" > "$inspector/node-path"
