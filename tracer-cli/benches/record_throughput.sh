#!/usr/bin/env bash
# Record throughput and overhead of `tracer-cli record`, and extract speed
# against `trace-cmd extract` (trace-cmd record cannot run on hosts that
# refuse the function tracers, so record itself is compared with no tracing).
#
# Needs root, tracefs, cc, trace-cmd. Uses private instances only.
# Usage: tracer-cli/benches/record_throughput.sh [MS_PER_RUN]   (default 2000)
set -euo pipefail
cd "$(dirname "$0")/../.."
MS=${1:-2000}
cargo build -q --release -p tracer-cli
T=$PWD/target/release/tracer-cli
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

cat > "$W/load.c" <<'C'
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static long ms;
static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6; }
static void *spin(void *arg) {
    cpu_set_t set; CPU_ZERO(&set); CPU_SET((int)(long)arg, &set); sched_setaffinity(0, sizeof(set), &set);
    double end = now() + ms; long n = 0;
    while (now() < end) { for (int i = 0; i < 1000; i++) syscall(SYS_getppid); n += 1000; }
    return (void *)n;
}
int main(int argc, char **argv) {
    ms = argc > 1 ? atol(argv[1]) : 1000;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN), total = 0; pthread_t t[256];
    for (long i = 0; i < cpus && i < 256; i++) pthread_create(&t[i], NULL, spin, (void *)i);
    for (long i = 0; i < cpus && i < 256; i++) { void *r; pthread_join(t[i], &r); total += (long)r; }
    printf("%ld\n", total);
    return 0;
}
C
cc -O2 -pthread -o "$W/load" "$W/load.c"

rate() { echo "$1 * 1000 / $MS" | bc; }

echo "== baseline: getppid storm on every CPU, no tracing, ${MS} ms"
n=$("$W/load" "$MS"); echo "syscalls/s: $(rate "$n")"

for extra in "" "-b 4"; do
  echo "== tracer-cli record -e syscalls:sys_exit_getppid $extra (recorder in background, load separate)"
  $T record -q -B bench_rec_$$ -e syscalls:sys_exit_getppid $extra -o "$W/r.dat" &
  rec=$!
  while [ ! -e /sys/kernel/tracing/instances/bench_rec_$$/tracing_on ] || \
        [ "$(cat /sys/kernel/tracing/instances/bench_rec_$$/tracing_on)" != 1 ]; do sleep 0.05; done
  sleep 0.2
  n=$("$W/load" "$MS")
  read -r ut st < <(awk '{print $14, $15}' /proc/$rec/stat)
  tk=$(getconf CLK_TCK)
  s0=$(date +%s.%N); kill -INT $rec; wait $rec; s1=$(date +%s.%N)
  read -r ev lost < <(
    $T report -i "$W/r.dat" | awk '/EVENTS DROPPED/ {gsub(/.*\[/,""); l+=$1; next} /sys_exit_getppid/ {e++} END {print e+0, l+0}')
  echo "load syscalls/s under tracing: $(rate "$n")"
  echo "events in file: $ev  reported lost: $lost  events/s recorded: $(rate "$ev")"
  echo "recorder CPU during the run: user $(echo "scale=2; $ut/$tk" | bc)s sys $(echo "scale=2; $st/$tk" | bc)s for ${MS} ms"
  echo "stop+flush+write: $(echo "$s1 - $s0" | bc) s; file $(stat -c %s "$W/r.dat") bytes"
done

echo "== extract of a full 16 MiB/CPU buffer: trace-cmd extract vs tracer-cli extract"
for who in trace-cmd tracer-cli; do
  inst=bench_ext_$$
  $T start -B $inst -e syscalls:sys_exit_getppid -b 16384
  "$W/load" 1000 >/dev/null
  $T stop -B $inst
  s0=$(date +%s.%N)
  if [ $who = trace-cmd ]; then trace-cmd extract -B $inst -o "$W/e.dat" >/dev/null 2>&1
  else $T extract -q -B $inst -o "$W/e.dat"; fi
  s1=$(date +%s.%N)
  n=$($T report -i "$W/e.dat" | grep -c sys_exit_getppid || true)
  echo "$who extract: $(echo "$s1 - $s0" | bc) s for $n events, file $(stat -c %s "$W/e.dat") bytes"
  [ -d /sys/kernel/tracing/instances/$inst ] && $T reset -B $inst -d
done
