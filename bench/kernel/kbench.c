// SPDX-License-Identifier: GPL-2.0
/*
 * kbench: the workload of bench/kernel.sh, run in the
 * benchmark guest. Static, non-PIE, frame pointers everywhere, so that the
 * kernel's user unwinders (synchronous userstacktrace and the deferred one)
 * walk exactly DEPTH frames.
 *
 *   kbench DEPTH N [WARMUP [STACK]]
 *
 * Recurses until the user stack is DEPTH frames deep (counted by walking its
 * own frame pointers with the kernel unwinder's rules: the interrupted ip,
 * then one return address per frame record), makes WARMUP getppid calls,
 * empties the ring buffers (truncating /sys/kernel/tracing/trace), then
 * times N getppid calls made with a raw `syscall` instruction (no libc
 * wrapper, no vDSO), and prints one line:
 *
 *   ns=<ns per call> bytes=<ring-buffer bytes> entries=<entries> overrun=<n> frames=<depth>
 *
 * bytes/entries/overrun are summed over per_cpu/cpuN/stats right after the
 * loop (bytes include the event headers, time extends and page padding:
 * what the calls cost the ring buffer). The few syscalls made to read the
 * stats themselves add a few events (well under 0.1% of N).
 *
 * STACK (bytes, default 0): main first reserves and writes that much of its
 * own frame, so that at least STACK bytes of live user stack lie above the
 * leaf's stack pointer whatever the stack randomization left at the top (the
 * snapshot modes of bench/kernel.sh: a user_stack_snapshot_size of STACK
 * then always finds that many bytes to copy). The frame pointer chain, and
 * so DEPTH, is the same.
 */
#include <alloca.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))
#define NR_GETPPID 110
#define TRACEFS "/sys/kernel/tracing"

static long n_calls, n_warmup;
static int want_depth;
volatile long sink;

static inline long raw_getppid(void)
{
	long ret;

	asm volatile("syscall" : "=a"(ret) : "0"((long)NR_GETPPID) : "rcx", "r11", "memory");
	return ret;
}

static int mem_fd = -1;

static void die(const char *what);

/* Reads one word of our own memory; false where the kernel's get_user() would fault. */
static int read_word(unsigned long addr, unsigned long *word)
{
	return pread(mem_fd, word, sizeof(*word), (off_t)addr) == (ssize_t)sizeof(*word);
}

/*
 * The number of frames the kernel's frame-pointer unwinder (kernel/unwind/user.c)
 * reports for a syscall made from our caller: the caller's ip, then one return
 * address per frame record, with the same stop rules (the frame pointer below
 * the stack pointer, a frame not above the previous one, misalignment, a fault).
 */
static NOINL int depth_here(void)
{
	unsigned long *self = __builtin_frame_address(0);
	unsigned long sp = (unsigned long)(self + 2), fp = self[0], cfa, ra, next;
	int n = 1;

	if (mem_fd < 0) {
		mem_fd = open("/proc/self/mem", O_RDONLY);
		if (mem_fd < 0)
			die("/proc/self/mem");
	}
	for (;;) {
		if (fp < sp)
			break;
		cfa = fp + 2 * sizeof(long);
		if (cfa <= sp || (cfa & (sizeof(long) - 1)))
			break;
		if (!read_word(cfa - sizeof(long), &ra) || !read_word(cfa - 2 * sizeof(long), &next))
			break;
		n++;
		sp = cfa;
		fp = next;
	}
	return n;
}

static void die(const char *what)
{
	fprintf(stderr, "kbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static long stat_field(const char *text, const char *name)
{
	const char *p = strstr(text, name);

	return p ? strtol(p + strlen(name), NULL, 10) : -1;
}

static void read_stats(long *bytes, long *entries, long *overrun)
{
	char path[96], buf[1024];
	int cpu, fd;
	ssize_t len;

	*bytes = *entries = *overrun = 0;
	for (cpu = 0;; cpu++) {
		snprintf(path, sizeof(path), TRACEFS "/per_cpu/cpu%d/stats", cpu);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			break;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			die(path);
		buf[len] = 0;
		*entries += stat_field(buf, "entries: ");
		*overrun += stat_field(buf, "overrun: ");
		*bytes += stat_field(buf, "bytes: ");
	}
	if (cpu == 0)
		die(TRACEFS "/per_cpu/cpu0/stats");
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The leaf: every syscall of the measurement is made from this frame. */
static NOINL void leaf(void)
{
	long bytes, entries, overrun, i;
	double t0, t1;
	int fd, frames = depth_here();

	for (i = 0; i < n_warmup; i++)
		sink += raw_getppid();
	fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC);
	if (fd < 0)
		die(TRACEFS "/trace");
	close(fd);
	t0 = now_ns();
	for (i = 0; i < n_calls; i++)
		sink += raw_getppid();
	t1 = now_ns();
	read_stats(&bytes, &entries, &overrun);
	printf("ns=%.1f bytes=%ld entries=%ld overrun=%ld frames=%d\n", (t1 - t0) / n_calls, bytes,
	       entries, overrun, frames);
}

/* One frame per level; the work after the call keeps it from being a tail call. */
static NOINL void descend(int more)
{
	if (more > 0)
		descend(more - 1);
	else
		leaf();
	sink++;
}

int main(int argc, char **argv)
{
	long stack;
	int base;

	if (argc < 3) {
		fprintf(stderr, "usage: kbench DEPTH N [WARMUP [STACK]]\n");
		return 2;
	}
	want_depth = atoi(argv[1]);
	n_calls = atol(argv[2]);
	n_warmup = argc > 3 ? atol(argv[3]) : 1000;
	stack = argc > 4 ? atol(argv[4]) : 0;
	if (stack > 0) {
		char *pad = alloca(stack);

		memset(pad, 1, stack);
		asm volatile("" : : "r"(pad) : "memory");
	}
	/* frames below main's callee: main, libc start code; leaf and descend add the rest */
	base = depth_here();
	if (n_calls <= 0 || want_depth < base + 2) {
		fprintf(stderr, "kbench: DEPTH must be at least %d and N positive\n", base + 2);
		return 2;
	}
	/* depth at leaf = base (main..) + 1 (leaf) + levels of descend */
	descend(want_depth - base - 2);
	return 0;
}
