#!/usr/bin/env bash
# ustack vs trace-cmd, measured in the same run on this machine.
#
#   bench/run.sh            # full run (about 5 minutes on 2 cores)
#   BENCH_QUICK=1 bench/run.sh   # fewer rounds, smaller files (about 1 minute)
#
# Needs root, a writable tracefs at /sys/kernel/tracing, trace-cmd, cargo.
# Uses hyperfine when installed (apt-get install hyperfine), else its own
# loop of timed runs. Builds the release binaries, generates every input in a
# temp dir, prints Markdown tables, then removes the temp dir (BENCH_KEEP=1
# keeps it) and the private tracefs instances it made. trace-cmd 3.1.6
# `extract -B` also resets the *top* instance (tracing_on, events/enable,
# current_tracer, set_ftrace_pid, its buffer): the script puts the top's
# tracing_on and current_tracer back, but events enabled in the top instance
# by someone else stay off, so run it where nothing else traces in the top
# instance. Not part of CI.
#
# Knobs (environment): BENCH_KB per-CPU buffer of the filled instance
# (default 32768: about 2M events on 2 CPUs), BENCH_RUNS timed runs per
# command (5), BENCH_EXTRACT_RUNS fills per extract variant (3),
# BENCH_GROUPS groups of the synthetic cookie trace (150000: about 1.2M
# records), BENCH_RECORD_SECS load time per record run (3),
# BENCH_RATE rate-limited load, syscalls/s per CPU (100000).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

if [ -n "${BENCH_QUICK:-}" ]; then
    : "${BENCH_KB:=8192}" "${BENCH_RUNS:=3}" "${BENCH_EXTRACT_RUNS:=1}" "${BENCH_GROUPS:=30000}" "${BENCH_RECORD_SECS:=1}"
fi
KB=${BENCH_KB:-32768}
RUNS=${BENCH_RUNS:-5}
XRUNS=${BENCH_EXTRACT_RUNS:-3}
NGROUPS=${BENCH_GROUPS:-150000}
RSECS=${BENCH_RECORD_SECS:-3}
RATE=${BENCH_RATE:-100000}
TR=/sys/kernel/tracing
EVENTS="sched syscalls timer irq"

die() { echo "bench/run.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (tracefs instances)"
[ -d $TR/instances ] || die "no tracefs at $TR"
command -v trace-cmd >/dev/null || die "trace-cmd is not installed"
HF=$(command -v hyperfine || true)

echo "building release binaries..." >&2
cargo build -q --release -p tracer-cli -p ustack-bench
W=$(mktemp -d /tmp/ustack-bench.XXXXXX)
# Private copies: a rebuild in the shared target dir during the run must not
# change what is measured.
cp "$ROOT/target/release/tracer-cli" "$ROOT/target/release/ustack-bench" "$W/"
T=$W/tracer-cli
B=$W/ustack-bench
INST=ustack_bench_$$
OUT=$W/results.md
TOP_TRACING_ON=$(cat "$TR/tracing_on")
TOP_TRACER=$(cat "$TR/current_tracer")
cleanup() {
    local i
    echo "$TOP_TRACING_ON" > "$TR/tracing_on" 2>/dev/null || true
    echo "$TOP_TRACER" > "$TR/current_tracer" 2>/dev/null || true
    for i in "$INST" "${INST}_rec" "${INST}_tcrec"; do
        if [ -d "$TR/instances/$i" ]; then
            echo 0 > "$TR/instances/$i/tracing_on" 2>/dev/null || true
            rmdir "$TR/instances/$i" 2>/dev/null || true
        fi
    done
    if [ -n "${BENCH_KEEP:-}" ]; then echo "kept $W" >&2; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "$*" | tee -a "$OUT"; }

# ---- machine ---------------------------------------------------------------
{
    echo "## Machine"
    echo
    echo "- $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB RAM"
    echo "- kernel $(uname -r), $(. /etc/os-release; echo "$PRETTY_NAME")"
    echo "- trace-cmd $(trace-cmd --version 2>/dev/null | sed -n 's/.*version \([^ ]*\).*/\1/p' | head -1), $("$T" --version), $(rustc --version | cut -d' ' -f1-2)"
    echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (shared machine: compare CPU time, not only wall time)"
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), runs per command: $RUNS, timer: $([ -n "$HF" ] && hyperfine --version || echo "bash time loop")"
    echo
} | tee -a "$OUT"

# ---- timing ----------------------------------------------------------------
# timeit LABEL CMD...: runs CMD (stdout to /dev/null) RUNS times after one
# warm-up; appends "| LABEL | min s | median s | user+sys s |" to $ROWS.
ROWS=$W/rows
timeit() {
    local label=$1; shift
    if [ -n "$HF" ]; then
        "$HF" -N --style none --warmup 1 --runs "$RUNS" --output null \
            --export-json "$W/hf.json" -- "$(printf '%q ' "$@")" >/dev/null 2>&1 ||
            die "hyperfine failed: $*"
        jq -r --arg l "$label" '.results[0] | "| \($l) | \(.min*1000|floor) | \(.median*1000|floor) | \((.user+.system)*1000|floor) |"' \
            "$W/hf.json" >> "$ROWS"
    else
        local i t
        "$@" >/dev/null 2>&1
        : > "$W/times"
        for ((i = 0; i < RUNS; i++)); do
            t=$( { TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>/dev/null; } 2>&1 )
            echo "$t" >> "$W/times"
        done
        sort -n "$W/times" | awk -v l="$label" '
            { w[NR] = $1; c += $2 + $3 }
            END { printf "| %s | %d | %d | %d |\n", l, w[1]*1000, w[int((NR+1)/2)]*1000, c/NR*1000 }' >> "$ROWS"
    fi
}
# rss CMD...: runs CMD once, leaves its peak RSS in MiB in $W/rss.
rss() {
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f %M -o "$W/rss.kb" "$@"
        awk '{ printf "%d", $1 / 1024 }' "$W/rss.kb" > "$W/rss"
    else
        "$@"; echo - > "$W/rss"
    fi
}
# timeit_rss LABEL CMD...: timeit, then one more run for its peak RSS,
# added as a last column.
timeit_rss() {
    local label=$1; shift
    timeit "$label" "$@"
    rss "$@" > /dev/null 2>&1
    sed -i "\$s/\$/ $(cat "$W/rss") |/" "$ROWS"
}
flush_rows() { cat "$ROWS" | tee -a "$OUT"; : > "$ROWS"; }
: > "$ROWS"

# ---- filled instance ---------------------------------------------------------
# fill: a private instance with $KB KB per CPU and the busy event systems,
# loaded until every CPU's buffer has gone round once (overwrite mode), so
# that each fill holds the same number of bytes. Prints "ops secs".
fill() {
    local d=$TR/instances/$INST s
    [ -d "$d" ] || mkdir "$d"
    echo 0 > "$d/tracing_on"
    echo "$KB" > "$d/buffer_size_kb"
    for s in $EVENTS; do echo 1 > "$d/events/$s/enable"; done
    for s in ${FILL_OPTS:-}; do echo 1 > "$d/options/$s"; done
    echo > "$d/trace"
    echo 1 > "$d/tracing_on"
    "$B" load --mix --secs 120 --until-full "$d"
    echo 0 > "$d/tracing_on"
}
unfill() {
    local d=$TR/instances/$INST
    if [ -d "$d" ]; then rmdir "$d"; fi
}

# ---- 1. extract: same buffer contents, each tool ---------------------------
say "## Extract: full ${KB} KB/CPU instance (sched, syscalls, timer, irq) -> trace.dat"
say
say "Each run refills the instance until every CPU buffer has wrapped, then extracts it (wall time of the extract command alone; $XRUNS fills per variant)."
say
say "| tool | compression | min ms | median ms | user+sys ms (median) | file MiB |"
say "|---|---|---|---|---|---|"
for comp in none zstd; do
    for tool in trace-cmd tracer-cli; do
        : > "$W/xt"
        for ((r = 1; r <= XRUNS; r++)); do
            fill > /dev/null
            f=$W/ext-$tool-$comp.dat
            rm -f "$f"
            if [ $tool = trace-cmd ]; then
                t=$( { TIMEFORMAT='%R %U %S'; time trace-cmd extract -B "$INST" --compression $comp -o "$f" >/dev/null 2>&1; } 2>&1 )
            else
                t=$( { TIMEFORMAT='%R %U %S'; time "$T" extract -q -B "$INST" --compression $comp -o "$f"; } 2>&1 )
            fi
            echo "$t $(stat -c %s "$f")" >> "$W/xt"
            # trace-cmd extract -B removes the instance itself; ours keeps it.
            unfill
        done
        sort -n "$W/xt" | awk -v t=$tool -v c=$comp '
            { w[NR] = $1; u[NR] = $2 + $3; s = $4 }
            END { m = int((NR+1)/2); printf "| %s | %s | %d | %d | %d | %.1f |\n", t, c, w[1]*1000, w[m]*1000, u[m]*1000, s/1048576 }' | tee -a "$OUT"
    done
done
say

# One more fill with the stock kernel's stack options on: every event is
# followed by a kernel_stack and a user_stack event, so report also prints
# `<stack trace >` and `<user stack trace >` blocks.
FILL_OPTS="stacktrace userstacktrace" fill > /dev/null
"$T" extract -q -B "$INST" --compression none -o "$W/ext-stacks-tracer-cli-none.dat"
unfill

# ---- 2. report: same file, both tools, outputs compared ---------------------
say "## report: \`trace-cmd report -i F > /dev/null\` vs \`tracer-cli report -i F > /dev/null\`"
say
say "| input file | events | output | trace-cmd min/median ms | tracer-cli min/median ms | trace-cmd user+sys ms | tracer-cli user+sys ms | trace-cmd / tracer-cli max RSS MiB |"
say "|---|---|---|---|---|---|---|---|"
for f in "$W"/ext-*.dat; do
    name=$(basename "$f" .dat)
    rss trace-cmd report -i "$f" > "$W/tc.txt" 2>/dev/null
    mtc=$(cat "$W/rss")
    rss "$T" report -i "$f" > "$W/us.txt"
    mus=$(cat "$W/rss")
    if cmp -s "$W/tc.txt" "$W/us.txt"; then same=identical; else same="DIFFERENT: $(cmp "$W/tc.txt" "$W/us.txt" 2>&1 | head -1)"; fi
    # Event lines (not stack lines, not drop notes): "[CPU] SECS.USECS:".
    lines=$(grep -Ec '\[[0-9]{3}\] +[0-9]+\.[0-9]+:' "$W/us.txt" || true)
    rm -f "$W/tc.txt" "$W/us.txt"
    timeit tc trace-cmd report -i "$f"
    timeit us "$T" report -i "$f"
    paste -d' ' <(sed -n 1p "$ROWS") <(sed -n 2p "$ROWS") | awk -F'|' -v n="$name" -v e="$lines" -v s="$same" -v m="$mtc / $mus" '
        { printf "| %s | %s | %s | %d / %d | %d / %d | %d | %d | %s |\n", n, e, s, $3, $4, $8, $9, $5, $10, m }' | tee -a "$OUT"
    : > "$ROWS"
done
say

# Latency to the first lines (`report -i F | head -20`): what a user waits
# for when paging a big file. Wall time of the pipeline, best and median.
first_lines() { # CMD...
    local i t0 t1
    : > "$W/fl"
    for ((i = 0; i < RUNS; i++)); do
        t0=$(date +%s%N)
        "$@" 2>/dev/null | head -20 > /dev/null
        t1=$(date +%s%N)
        echo $(( (t1 - t0) / 1000000 )) >> "$W/fl"
    done
    sort -n "$W/fl" | awk '{ a[NR] = $1 } END { printf "%d / %d", a[1], a[int((NR+1)/2)] }'
}
say "Time to the first 20 lines, \`report -i F | head -20\` (min / median ms of $RUNS):"
say
say "| input file | trace-cmd | tracer-cli |"
say "|---|---|---|"
for f in "$W"/ext-*.dat; do
    say "| $(basename "$f" .dat) | $(first_lines trace-cmd report -i "$f") | $(first_lines "$T" report -i "$f") |"
done
say

# ---- 3. decoder alone, stitching, TUI ----------------------------------------
echo "generating the synthetic cookie trace ($NGROUPS groups)..." >&2
"$B" gen-cookie "$W/cookie-none.dat" "$NGROUPS" none
"$B" gen-cookie "$W/cookie-zstd.dat" "$NGROUPS" zstd

say "## tracedata decoder alone (open + every event merged over CPUs, \`ustack-bench decode\`)"
say
say "| file | events | min ms | median ms | M events/s | detail |"
say "|---|---|---|---|---|---|"
for f in "$W"/ext-*.dat "$W"/cookie-*.dat; do "$B" decode "$f" "$RUNS" | tee -a "$OUT"; done
say

say "## Stitching (index + stitch of one buffer, \`ustack-bench stitch\`)"
say
say "| file | events | min ms | median ms | M events/s | detail |"
say "|---|---|---|---|---|---|"
for f in "$W"/cookie-*.dat "$W"/ext-tracer-cli-none.dat; do "$B" stitch "$f" "$RUNS" | tee -a "$OUT"; done
say

say "## TUI: time to first frame, headless (\`tui::open\` + refresh + render into a 200x50 TestBackend)"
say
say "| file | events | min ms | median ms | M events/s | detail |"
say "|---|---|---|---|---|---|"
for f in "$W"/cookie-*.dat "$W"/ext-tracer-cli-none.dat; do "$B" tui "$f" "$RUNS" | tee -a "$OUT"; done
say

# The real binary in a 200x50 tmux pane: from the start of the command until
# the header line ("N events | N groups") is on the screen, polled every
# 10 ms (includes starting the tmux server); then its peak RSS so far
# (VmHWM, the largest of the runs).
if command -v tmux >/dev/null; then
    say "\`tracer-cli tui -i F\` in a 200x50 tmux pane, until its header line is on screen (median of $RUNS, polled every 10 ms):"
    say
    for f in "$W"/cookie-none.dat "$W"/ext-tracer-cli-none.dat; do
        : > "$W/tt"
        : > "$W/tr"
        for ((r = 0; r < RUNS; r++)); do
            s=ustack_bench_tui_$$_$r
            t0=$(date +%s%N)
            tmux -L "$s" new-session -d -s "$s" -x 200 -y 50 "exec $T tui -i $f" ||
                { echo "tmux failed" >&2; continue; }
            for ((i = 0; i < 3000; i++)); do
                tmux -L "$s" capture-pane -p -t "$s" 2>/dev/null | grep -q ' events | ' && break
                sleep 0.01
            done
            t1=$(date +%s%N)
            # Peak RSS of the TUI once its first frame is up.
            p=$(tmux -L "$s" display -p -t "$s" '#{pane_pid}' 2>/dev/null || true)
            [ -n "$p" ] && awk '/^VmHWM:/ { printf "%d\n", $2 / 1024 }' "/proc/$p/status" >> "$W/tr" 2>/dev/null || true
            tmux -L "$s" kill-server 2>/dev/null || true
            echo $(( (t1 - t0) / 1000000 )) >> "$W/tt"
        done
        say "- $(basename "$f"): $(sort -n "$W/tt" | awk '{ a[NR] = $1 } END { print a[int((NR+1)/2)] }') ms (min $(sort -n "$W/tt" | head -1) ms), peak RSS $(sort -n "$W/tr" | tail -1) MiB"
    done
    say
fi

say "## Cookie trace ($NGROUPS groups): stitched views vs plain report"
say
# The user frames are in the machine's libc: with its separate debug file
# (libc6-dbg) they also get file:line, which costs memory.
libc_dbg="no"
id=$(readelf -n /usr/lib/x86_64-linux-gnu/libc.so.6 2>/dev/null | awk '/Build ID/ { print $3 }')
[ -n "$id" ] && [ -f "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ] && libc_dbg="yes"
say "libc's separate debug file present: $libc_dbg."
say
say "| command | min ms | median ms | user+sys ms | max RSS MiB |"
say "|---|---|---|---|---|"
for c in none zstd; do
    f=$W/cookie-$c.dat
    trace-cmd report -i "$f" > "$W/tc.txt" 2>/dev/null
    "$T" report -i "$f" > "$W/us.txt"
    cmp -s "$W/tc.txt" "$W/us.txt" || echo "WARNING: report of $(basename "$f") differs from trace-cmd" | tee -a "$OUT"
    rm -f "$W/tc.txt" "$W/us.txt"
    timeit_rss "trace-cmd report (cookie-$c)" trace-cmd report -i "$f"
    timeit_rss "tracer-cli report (cookie-$c)" "$T" report -i "$f"
    timeit_rss "tracer-cli report --stacks (cookie-$c)" "$T" report --stacks -i "$f"
    timeit_rss "tracer-cli report --folded (cookie-$c)" "$T" report --folded -i "$f"
done
flush_rows
say

# ---- 4. record ---------------------------------------------------------------
say "## record under a fixed load (sys_enter/sys_exit_getppid, -b 4096, ${RSECS} s, one pinned thread per CPU)"
say
RD=$TR/instances/${INST}_tcrec
if timeout 20 trace-cmd record -B "${INST}_tcrec" -e syscalls:sys_enter_getppid \
        -o "$W/tcprobe.dat" true > "$W/tcprobe.log" 2>&1 && [ -s "$W/tcprobe.dat" ]; then
    TCREC=1
else
    TCREC=
    say "trace-cmd record cannot run here: \`$(grep -v '^$' "$W/tcprobe.log" | tr -s ' \n' ' ' | cut -c1-120)\` (it writes 1 to /proc/sys/kernel/ftrace_enabled, which this host refuses with EPERM), so only tracer-cli record is measured."
    say
fi
[ -d "$RD" ] && rmdir "$RD"

read -r bops bsecs < <("$B" load --secs "$RSECS")
# The same events written into a private instance that nobody reads: the
# kernel's share of the slowdown, so that the recorder's own is the rest.
d=$TR/instances/${INST}_rec
mkdir "$d"
echo 4096 > "$d/buffer_size_kb"
echo 1 > "$d/events/syscalls/sys_enter_getppid/enable"
echo 1 > "$d/events/syscalls/sys_exit_getppid/enable"
echo 1 > "$d/tracing_on"
read -r tops tsecs < <("$B" load --secs "$RSECS")
echo 0 > "$d/tracing_on"
rmdir "$d"
say "Load without tracing: $(awk -v o="$bops" -v s="$bsecs" 'BEGIN { printf "%.2f", o/s/1e6 }') M getppid/s; with both events written into an instance nobody reads: $(awk -v o="$tops" -v s="$tsecs" 'BEGIN { printf "%.2f", o/s/1e6 }') M getppid/s (the kernel's share of the cost; the recorder's share is what the max row loses beyond that)."
say
say "| recorder | load | load M ops/s | events in file | expected (2 x ops) | dropped (reported) | recorder CPU % | stop+write ms |"
say "|---|---|---|---|---|---|---|---|"
record_one() { # TOOL RATE
    local tool=$1 rate=$2 inst=${INST}_rec f=$W/rec.dat pid ops secs ut st t0 t1 ev lost larg=""
    [ "$tool" = trace-cmd ] && inst=${INST}_tcrec
    [ "$rate" != max ] && larg="--rate $rate"
    rm -f "$f"
    if [ "$tool" = trace-cmd ]; then
        trace-cmd record -q -B "$inst" -b 4096 -e syscalls:sys_enter_getppid -e syscalls:sys_exit_getppid -o "$f" > /dev/null 2>&1 &
    else
        "$T" record -q -B "$inst" -b 4096 -e syscalls:sys_enter_getppid -e syscalls:sys_exit_getppid -o "$f" &
    fi
    pid=$!
    for ((i = 0; i < 200; i++)); do
        [ "$(cat "$TR/instances/$inst/tracing_on" 2>/dev/null)" = 1 ] && break
        sleep 0.05
    done
    sleep 0.2
    read -r ut0 st0 < <(awk '{print $14, $15}' /proc/$pid/stat)
    # shellcheck disable=SC2086
    read -r ops secs < <("$B" load --secs "$RSECS" $larg)
    read -r ut st < <(awk '{print $14, $15}' /proc/$pid/stat)
    t0=$(date +%s%N); kill -INT $pid; wait $pid || true; t1=$(date +%s%N)
    read -r ev lost < <("$T" report -i "$f" | awk '
        /EVENTS DROPPED/ { s = $0; sub(/.*\[/, "", s); l += s + 0; next }
        /sys_(enter|exit)_getppid/ { e++ }
        END { print e + 0, l + 0 }')
    awk -v t="$tool" -v r="$rate" -v o="$ops" -v s="$secs" -v e="$ev" -v l="$lost" \
        -v cpu="$(( (ut + st - ut0 - st0) ))" -v hz="$(getconf CLK_TCK)" -v w="$(( (t1 - t0) / 1000000 ))" '
        BEGIN { printf "| %s | %s | %.2f | %d | %d | %d | %.1f | %d |\n", t, (r == "max" ? "max" : r "/s/CPU"), o/s/1e6, e, 2*o, l, 100*cpu/hz/s, w }' | tee -a "$OUT"
    [ -d "$TR/instances/$inst" ] && rmdir "$TR/instances/$inst"
    rm -f "$f"
}
for rate in "$RATE" max; do
    record_one tracer-cli "$rate"
    [ -n "$TCREC" ] && record_one trace-cmd "$rate"
done
say

echo >&2
echo "results: $OUT (also printed above)" >&2
if [ -n "${BENCH_OUT:-}" ]; then cp "$OUT" "$BENCH_OUT"; fi
