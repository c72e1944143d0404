#!/usr/bin/env bash
# Replay the golden vectors (tests/vectors/wire.txt) through the v1model program on BMv2
# simple_switch and compare every frame it sends with what the Rust model sends.
#
#   sudo p4/replay/replay.sh            # from the repository root; needs root for netns
#
# Needs on the PATH: p4c-bm2-ss (or p4c), simple_switch, simple_switch_CLI, python3, ip,
# cargo. Not part of CI: the P4 tools are not installable on the project's machines.
# Exits 2 when a tool is missing, 1 when BMv2 and the model disagree, 0 when they agree.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
ns="switchml-replay"
ports=4

missing=()
compiler=""
if command -v p4c-bm2-ss >/dev/null; then compiler=p4c-bm2-ss;
elif command -v p4c >/dev/null; then compiler=p4c; else missing+=("p4c-bm2-ss or p4c"); fi
for tool in simple_switch simple_switch_CLI python3 ip cargo; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "replay.sh: cannot replay, missing on PATH: ${missing[*]}" >&2
    echo "replay.sh: install p4c and behavioral-model (BMv2) to run it; nothing was checked." >&2
    exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "replay.sh: needs root (network namespace and veth pairs)" >&2
    exit 2
fi

work="$(mktemp -d)"
switch_pid=""
cleanup() {
    if [[ -n "$switch_pid" ]]; then kill "$switch_pid" 2>/dev/null || true; fi
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "== compiling p4/v1model/switchml.p4 with $compiler"
if [[ $compiler == p4c-bm2-ss ]]; then
    p4c-bm2-ss --std p4-16 -I "$root/p4/include" -o "$work/switchml.json" \
        "$root/p4/v1model/switchml.p4"
else
    p4c --target bmv2 --arch v1model --std p4-16 -I "$root/p4/include" -o "$work" \
        "$root/p4/v1model/switchml.p4"
fi

echo "== expected frames from the model"
(cd "$root" && cargo run -q -p switchml-p4model --bin expected) > "$work/expected.txt"
(cd "$root" && cargo run -q -p switchml-p4model --bin expected -- --cli) > "$work/commands.txt"
if ! diff -q "$work/commands.txt" "$here/commands.txt" >/dev/null; then
    echo "replay.sh: p4/replay/commands.txt is stale; regenerate it" >&2
    exit 1
fi

echo "== network namespace $ns: host h<i> <-> switch port s<i>, i in 0..$((ports - 1))"
ip netns add "$ns"
for i in $(seq 0 $((ports - 1))); do
    ip -n "$ns" link add "h$i" type veth peer name "s$i"
    for dev in "h$i" "s$i"; do
        ip -n "$ns" link set "$dev" up
        ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
    done
done

ifaces=()
for i in $(seq 0 $((ports - 1))); do ifaces+=(-i "$i@s$i"); done
ip netns exec "$ns" simple_switch --thrift-port 9090 "${ifaces[@]}" "$work/switchml.json" \
    > "$work/switch.log" 2>&1 &
switch_pid=$!
for _ in $(seq 50); do
    if ip netns exec "$ns" simple_switch_CLI --thrift-port 9090 <<< "show_tables" >/dev/null 2>&1
    then break; fi
    sleep 0.2
done
ip netns exec "$ns" simple_switch_CLI --thrift-port 9090 < "$here/commands.txt" > "$work/cli.log"

echo "== replaying"
hosts=()
for i in $(seq 0 $((ports - 1))); do hosts+=("h$i"); done
if ip netns exec "$ns" python3 "$here/replay.py" "$work/expected.txt" "${hosts[@]}"; then
    echo "replay.sh: BMv2 and the model agree on every vector"
else
    echo "replay.sh: BMv2 and the model disagree (switch log: kept below)" >&2
    tail -n 50 "$work/switch.log" >&2
    exit 1
fi
