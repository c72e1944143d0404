#!/usr/bin/env bash
# Replay the golden wire vectors (tests/vectors/wire.txt) and switch scenarios
# (tests/vectors/switch.txt) through the v1model program on BMv2 simple_switch, and compare
# every frame it sends, on every port, with what the Rust model sends.
#
#   sudo p4/replay/replay.sh            # from anywhere; root for the network namespace
#
# Steps: compile p4/v1model/switchml.p4 with p4c-bm2-ss (or p4c); have the model write the
# expected frames and the tables of every bed (`expected`, `expected --scenarios`); make a
# network namespace with veth pairs h<i> <-> s<i> and hcpu <-> scpu (the CPU port, 64); then
# for each bed (the wire vectors' test bed, then one per scenario) start simple_switch on
# s0..s3 and scpu, check it is alive and loaded the program, load the bed's tables, and run
# replay.py on h0..h3 and hcpu, which first checks that the switch answers at all and then
# compares every frame; on hcpu it plays the controller, sending the model's controller's
# frames (p4/README.md, "Joins and the controller").
#
# Needs on the PATH: p4c-bm2-ss (or p4c), simple_switch, simple_switch_CLI, python3, ip,
# cargo. Logs (compiler, every switch log, CLI output, replay reports) are kept in a fresh
# directory under ${TMPDIR:-/tmp} whose path is printed first and last; never deleted.
#
# Exit status:
#   0   BMv2 and the model agree on every frame of every bed
#   1   they disagree (a frame missing, extra or different; the report names it)
#   2   the run could not be set up (not root, stale commands.txt, the model failed)
#   3   no switch: simple_switch exited, did not load the program or the tables, or did not
#       answer the liveness check; never reported as a pass
#   4   the P4 compiler rejected the program
#   77  SKIP: p4c or BMv2 is not installed; nothing was checked (as in CI)
set -euo pipefail

here="$(cd "${BASH_SOURCE[0]%/*}" && pwd)"
root="$(cd "$here/../.." && pwd)"
# One namespace per run (its pid in the name): two replays at once on one machine must not
# tear down each other's veths.
ns="switchml-replay-$$"
ports=4
# The v1model program's CPU_PORT (p4/v1model/switchml.p4): the controller's port, a veth
# pair hcpu <-> scpu, where replay.py plays the controller with the model's frames.
cpu_port=64

# Tools first, with builtins only, so that the skip path works with nothing installed.
missing=()
compiler=""
if command -v p4c-bm2-ss >/dev/null; then compiler=p4c-bm2-ss
elif command -v p4c >/dev/null; then compiler=p4c
else missing+=("p4c-bm2-ss (or p4c)"); fi
for tool in simple_switch simple_switch_CLI python3 ip cargo; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "replay.sh: SKIP: not on PATH: ${missing[*]}" >&2
    echo "replay.sh: install p4c and behavioral-model (BMv2) to replay; nothing was checked." >&2
    exit 77
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "replay.sh: needs root (network namespace and veth pairs): sudo $0" >&2
    exit 2
fi

logs="$(mktemp -d "${TMPDIR:-/tmp}/switchml-replay.XXXXXX")"
echo "replay.sh: logs in $logs"
switch_pid=""
stop_switch() {
    if [[ -n "$switch_pid" ]]; then
        kill "$switch_pid" 2>/dev/null || true
        wait "$switch_pid" 2>/dev/null || true
        switch_pid=""
    fi
}
cleanup() {
    stop_switch
    ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT
# fail STATUS MESSAGE [LOG]: say why, show the end of LOG, name the logs, exit.
fail() {
    echo "replay.sh: FAIL: $2" >&2
    if [[ -n "${3:-}" && -f "$3" ]]; then
        echo "---- last lines of $3" >&2
        tail -n 40 "$3" >&2
        echo "----" >&2
    fi
    echo "replay.sh: logs kept in $logs" >&2
    exit "$1"
}

echo "== compiling p4/v1model/switchml.p4 with $compiler"
json="$logs/switchml.json"
if [[ $compiler == p4c-bm2-ss ]]; then
    compile=(p4c-bm2-ss --std p4-16 -I "$root/p4/include" -o "$json" "$root/p4/v1model/switchml.p4")
else
    compile=(p4c --target bmv2 --arch v1model --std p4-16 -I "$root/p4/include" -o "$logs"
             "$root/p4/v1model/switchml.p4")
fi
if ! "${compile[@]}" > "$logs/compile.log" 2>&1 || [[ ! -s $json ]]; then
    fail 4 "$compiler rejected p4/v1model/switchml.p4" "$logs/compile.log"
fi

echo "== expected frames and tables from the model"
model=(cargo run -q --manifest-path "$root/Cargo.toml" -p switchml-p4model-harness --bin expected --)
"${model[@]}" > "$logs/wire.expected" || fail 2 "the model's expected binary failed"
"${model[@]}" --cli > "$logs/wire.commands" || fail 2 "the model's expected binary failed"
if ! diff -q "$logs/wire.commands" "$here/commands.txt" >/dev/null; then
    fail 2 "p4/replay/commands.txt is stale; regenerate it with \`expected --cli\`"
fi
"${model[@]}" --scenarios "$logs/scenarios" \
    || fail 2 "the model does not reproduce tests/vectors/switch.txt (see above)"

echo "== network namespace $ns: host h<i> <-> switch port s<i>, i in 0..$((ports - 1)); hcpu <-> CPU port $cpu_port"
ip netns del "$ns" 2>/dev/null || true
ip netns add "$ns"
ip -n "$ns" link set lo up    # simple_switch_CLI reaches the Thrift server on localhost
for ((i = 0; i < ports; i++)); do
    ip -n "$ns" link add "h$i" type veth peer name "s$i"
    for dev in "h$i" "s$i"; do
        ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
        ip -n "$ns" link set "$dev" up
    done
done
ip -n "$ns" link add hcpu type veth peer name scpu
for dev in hcpu scpu; do
    ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
    ip -n "$ns" link set "$dev" up
done
ifaces=()
hosts=()
for ((i = 0; i < ports; i++)); do ifaces+=(-i "$i@s$i"); hosts+=("h$i"); done
ifaces+=(-i "$cpu_port@scpu")
hosts+=("$cpu_port=hcpu")

# cli PORT: simple_switch_CLI on the bed's Thrift port, commands on stdin.
cli() { ip netns exec "$ns" simple_switch_CLI --thrift-port "$1"; }

# bed NAME COMMANDS EXPECTED PORT: one fresh switch, its tables, its replay. Returns
# replay.py's status (0 or 1); exits on anything that means there is no working switch.
bed() {
    local name=$1 commands=$2 expected=$3 port=$4
    local log="$logs/$name.switch.log"
    ip netns exec "$ns" simple_switch --thrift-port "$port" --log-console "${ifaces[@]}" \
        "$json" > "$log" 2>&1 &
    switch_pid=$!
    local loaded=""
    for _ in $(seq 100); do
        kill -0 "$switch_pid" 2>/dev/null || fail 3 "[$name] simple_switch exited at start" "$log"
        if cli "$port" <<< "show_tables" > "$logs/$name.tables" 2>&1 \
            && grep -q "job_table" "$logs/$name.tables"; then
            loaded=yes
            break
        fi
        sleep 0.2
    done
    [[ -n $loaded ]] || fail 3 "[$name] simple_switch did not answer on Thrift port $port with the program loaded (no job_table)" "$log"
    cli "$port" < "$commands" > "$logs/$name.cli.log" 2>&1 \
        || fail 3 "[$name] simple_switch_CLI failed loading $commands" "$logs/$name.cli.log"
    # The CLI reports a refused or unparsable command on its output, not in its status.
    if ! python3 "$here/replay.py" --cli-log "$logs/$name.cli.log" > "$logs/$name.cli.complaints"; then
        fail 3 "[$name] simple_switch_CLI complained loading $commands: $(head -n 1 "$logs/$name.cli.complaints")" \
            "$logs/$name.cli.complaints"
    fi
    local status=0
    ip netns exec "$ns" python3 "$here/replay.py" "$expected" "${hosts[@]}" \
        > "$logs/$name.replay.log" 2>&1 || status=$?
    kill -0 "$switch_pid" 2>/dev/null || fail 3 "[$name] simple_switch died during the replay" "$log"
    stop_switch
    case $status in
        0) echo "   [$name] $(tail -n 1 "$logs/$name.replay.log")" ;;
        1) echo "   [$name] DIFFERS: $logs/$name.replay.log"; return 1 ;;
        3) fail 3 "[$name] $(head -n 1 "$logs/$name.replay.log")" "$log" ;;
        *) fail 2 "[$name] replay.py failed (status $status)" "$logs/$name.replay.log" ;;
    esac
}

echo "== replaying"
differ=0
bed wire "$logs/wire.commands" "$logs/wire.expected" 9090 || differ=$((differ + 1))
port=9091
for expected in "$logs"/scenarios/*.expected; do
    stem="${expected%.expected}"
    bed "scenario-${stem##*/}" "$stem.commands" "$expected" "$port" || differ=$((differ + 1))
    port=$((port + 1))
done

if ((differ)); then
    echo "replay.sh: FAIL: BMv2 and the model disagree on $differ bed(s); reports and switch logs in $logs" >&2
    exit 1
fi
echo "replay.sh: BMv2 and the model agree on every frame of every bed; logs in $logs"
