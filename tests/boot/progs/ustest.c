// SPDX-License-Identifier: GPL-2.0
/*
 * ustest: the guest-side test program of the ustack boot tests (tests/boot).
 *
 * Static, non-PIE, built with frame pointers, so every user stack the kernel
 * records can be symbolized on the host against this binary's symbol table
 * (nm) and compared with the known call chains below. The syscalls are issued
 * with inline asm from the innermost function, so the interrupted user IP is
 * inside that function and the frame-pointer chain continues at its caller.
 *
 * usage:
 *   ustest chain N        main -> do_chain -> chain_level1 -> chain_level2 -> chain_level3: N x nanosleep(100us)
 *   ustest flood N FILE   N x (getpid from flood_leaf, then "ustest seq=I" into FILE,
 *                         a trace_marker) as fast as possible
 *   ustest migrate N      thread mig_worker -> mig_level1 -> mig_sleep: N x nanosleep(20ms);
 *                         during each sleep the main thread moves it to the other CPU
 *   ustest exiter N       N children: child_level1 -> child_exit, exit_group from inside
 *   ustest stress SECS    8 threads fork/exit/getpid/nanosleep for SECS seconds
 *   ustest maps N FILE    /proc/self/maps into FILE, then chain N (the ground truth of
 *                         the kernel's mapping records of a process gone before the read)
 *   ustest gang N FILE    N children, each held until SIGUSR1 reaches the parent, then
 *                         chain 3 (each prints its own chain line); FILE gets "I PID" per
 *                         child (written whole, by rename) before the parent waits: the
 *                         caller can set up a filter per child pid, then release them all
 *   ustest deep N         main -> do_deep -> deep_level x N -> deep_leaf: one getppid, from
 *                         a user stack deeper than a ring buffer sub-buffer holds
 *   ustest signal N       main -> do_signal -> sig_level1 -> sig_raise: N x kill(self,
 *                         SIGUSR1), handled; the signal is delivered on the way back
 *                         from kill, after the deferred unwind ran (requests then are late)
 *   ustest snap N         main -> do_snap -> snap_level1 (12 KB of locals) -> snap_leaf:
 *                         N x getppid (N <= 64), each with two words on snap_leaf's stack,
 *                         SNAP_MAGIC + i and their own address; prints, per call, the
 *                         stack pointer at the syscall instruction and the words' address,
 *                         and the range of its [stack] mapping (user stack snapshots)
 *   ustest threads N      3 threads thr_worker -> thr_level1 -> thr_leaf: N x getppid each,
 *                         after the main thread's own N from main -> do_threads -> thr_leaf;
 *                         prints the threads' tids (a process whose stacks come from
 *                         tasks other than its group leader)
 *
 *   ustest ipi N          main -> do_ipi -> ipi_level1 -> ipi_leaf: N x getppid on CPU 0,
 *                         while a thread on CPU 1 makes TLB shootdown IPIs reach it without
 *                         pause (mprotect; interrupts nest in the unwind callback's writes)
 *
 *   ustest uprobe N       main -> do_uprobe -> up_level1 -> up_target: N calls, while a
 *                         thread moves the main thread between CPU 0 and 1 without pause
 *                         (a uprobe on up_target commits its event preemptibly); prints
 *                         up_target's file offset ("ustest uprobe 0" only prints it)
 *
 * Each mode prints one line of ground truth to stdout: "ustest MODE pid=P ...".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINL __attribute__((noinline, noclone, used))
/* keeps each call a real call with a return address (no sibling calls) */
#define BARRIER() asm volatile("" ::: "memory")

static inline __attribute__((always_inline)) long sys2(long nr, long a, long b)
{
	long ret;

	asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return ret;
}

static volatile long sink;

/*
 * Called right after each syscall by the innermost functions: it makes them
 * non-leaf, so that gcc gives them a frame (push %rbp) even when they need no
 * stack; without one, the frame-pointer unwinder skips their caller.
 */
NOINL void after_syscall(long r)
{
	sink += r;
}

/* ---- chain ---- */
NOINL long chain_level3(int n)
{
	struct timespec ts = { 0, 100 * 1000 }; /* long enough to always switch */
	long r = 0;

	for (int i = 0; i < n; i++) {
		r += sys2(SYS_nanosleep, (long)&ts, 0);
		after_syscall(r);
	}
	BARRIER();
	return r;
}

NOINL long chain_level2(int n)
{
	long r = chain_level3(n);

	BARRIER();
	return r + 1;
}

NOINL long chain_level1(int n)
{
	long r = chain_level2(n);

	BARRIER();
	return r + 1;
}

NOINL int do_chain(int n)
{
	sink = chain_level1(n);
	printf("ustest chain pid=%d iterations=%d syscall=%d\n", getpid(), n, SYS_nanosleep);
	return 0;
}

/* ---- deep ---- */
NOINL long deep_leaf(void)
{
	long r = sys2(SYS_getppid, 0, 0);

	after_syscall(r);
	return r;
}

NOINL long deep_level(int n)
{
	long r = n ? deep_level(n - 1) : deep_leaf();

	BARRIER();
	return r + 1;
}

NOINL int do_deep(int n)
{
	sink = deep_level(n);
	printf("ustest deep pid=%d depth=%d syscall=%d\n", getpid(), n, SYS_getppid);
	return 0;
}

/* ---- snap ---- */
#define SNAP_MAGIC 0x5eedf00d00c0ffeeUL
#define SNAP_MAX 64
static unsigned long snap_sp[SNAP_MAX], snap_marker[SNAP_MAX];

NOINL long snap_leaf(int i)
{
	volatile unsigned long marker[2];
	unsigned long sp;
	long r;

	marker[0] = SNAP_MAGIC + i;
	marker[1] = (unsigned long)&marker[0];
	/* the stack pointer the kernel sees: rsp at the syscall instruction */
	asm volatile("mov %%rsp, %1\n\tsyscall"
		     : "=a"(r), "=&r"(sp)
		     : "a"((long)SYS_getppid)
		     : "rcx", "r11", "memory");
	snap_sp[i] = sp;
	snap_marker[i] = (unsigned long)&marker[0];
	after_syscall(r);
	return r;
}

NOINL long snap_level1(int n)
{
	volatile char pad[12288];
	long r = 0;

	pad[0] = 1;
	pad[sizeof(pad) - 1] = 1;
	for (int i = 0; i < n; i++)
		r += snap_leaf(i);
	return r + pad[0];
}

NOINL int do_snap(int n)
{
	unsigned long lo = 0, hi = 0;
	char line[512];
	FILE *f;

	if (n > SNAP_MAX)
		n = SNAP_MAX;
	sink = snap_level1(n);
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]"))
			sscanf(line, "%lx-%lx", &lo, &hi);
	if (f)
		fclose(f);
	printf("ustest snap pid=%d n=%d syscall=%d stack=%lx-%lx magic=%lx\n", getpid(), n,
	       SYS_getppid, lo, hi, SNAP_MAGIC);
	for (int i = 0; i < n; i++)
		printf("snap i=%d sp=%lx marker=%lx\n", i, snap_sp[i], snap_marker[i]);
	return 0;
}

/* ---- flood ---- */
NOINL long flood_leaf(void)
{
	long r = sys2(SYS_getpid, 0, 0);

	after_syscall(r);
	return r;
}

NOINL int do_flood(int n, const char *marker)
{
	int fd = open(marker, O_WRONLY);
	char buf[64];

	if (fd < 0) {
		perror(marker);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int len = snprintf(buf, sizeof(buf), "ustest seq=%d", i);

		int tries = 0;

		sink += flood_leaf();
		/*
		 * With overwrite off, a full buffer refuses the marker (EBADF)
		 * until the reader empties a page: wait for it, so that every
		 * iteration keeps its marker (no other traced syscall runs in
		 * between, so the interval it closes stays the same).
		 */
		while (write(fd, buf, len) != len) {
			if (errno != EBADF || ++tries > 10000) {
				perror("write marker");
				return 1;
			}
			usleep(1000);
		}
	}
	close(fd);
	printf("ustest flood pid=%d iterations=%d syscall=%d\n", getpid(), n, SYS_getpid);
	return 0;
}

/* ---- migrate ---- */
static volatile int mig_tid;
static volatile int mig_in_sleep;
static int mig_n;

NOINL long mig_sleep(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	long r;

	mig_in_sleep = 1;
	r = sys2(SYS_nanosleep, (long)&ts, 0);
	after_syscall(r);
	return r;
}

NOINL long mig_level1(void)
{
	long r = mig_sleep();

	BARRIER();
	return r + 1;
}

static int pin(int tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(tid, sizeof(set), &set);
}

NOINL void *mig_worker(void *arg)
{
	(void)arg;
	mig_tid = (int)syscall(SYS_gettid);
	for (int i = 0; i < mig_n; i++) {
		while (mig_in_sleep) /* wait until the mover has done its job */
			sched_yield();
		sink += mig_level1();
	}
	return NULL;
}

NOINL int do_migrate(int n)
{
	pthread_t t;
	int moved = 0;

	mig_n = n;
	pin(0, 0);
	if (pthread_create(&t, NULL, mig_worker, NULL))
		return 1;
	for (int i = 0; i < n; i++) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };

		while (!mig_in_sleep)
			sched_yield();
		/* the worker is inside nanosleep (or about to enter it): move it */
		nanosleep(&ts, NULL);
		if (pin(mig_tid, (i + 1) % 2) == 0)
			moved++;
		mig_in_sleep = 0;
	}
	pthread_join(t, NULL);
	printf("ustest migrate pid=%d tid=%d iterations=%d moved=%d syscall=%d\n", getpid(), mig_tid, n,
	       moved, SYS_nanosleep);
	return 0;
}

/* ---- threads ---- */
#define THR_N 3
static int thr_tid[THR_N];
static int thr_n;

NOINL long thr_leaf(int n)
{
	long r = 0;

	for (int i = 0; i < n; i++) {
		r += sys2(SYS_getppid, 0, 0);
		after_syscall(r);
	}
	BARRIER();
	return r;
}

NOINL long thr_level1(int n)
{
	long r = thr_leaf(n);

	BARRIER();
	return r + 1;
}

NOINL void *thr_worker(void *arg)
{
	thr_tid[(long)arg] = gettid();
	sink += thr_level1(thr_n);
	BARRIER();
	return NULL;
}

NOINL int do_threads(int n)
{
	pthread_t t[THR_N];

	thr_n = n;
	sink += thr_leaf(n);
	for (long i = 0; i < THR_N; i++)
		if (pthread_create(&t[i], NULL, thr_worker, (void *)i))
			return 1;
	for (int i = 0; i < THR_N; i++)
		pthread_join(t[i], NULL);
	printf("ustest threads pid=%d tids=%d,%d,%d iterations=%d syscall=%d\n", getpid(), thr_tid[0],
	       thr_tid[1], thr_tid[2], n, SYS_getppid);
	return 0;
}

/* ---- exiter ---- */
NOINL void child_exit(int code)
{
	after_syscall(sys2(SYS_exit_group, code, 0));
	for (;;)
		;
}

NOINL void child_level1(int code)
{
	child_exit(code);
	BARRIER();
}

NOINL int do_exiter(int n)
{
	int bad = 0;

	printf("ustest exiter pid=%d children=", getpid());
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		int st;

		if (p == 0)
			child_level1(i & 0x7f);
		if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != (i & 0x7f))
			bad++;
		printf("%s%d", i ? "," : "", p);
	}
	printf(" iterations=%d bad=%d syscall=%d\n", n, bad, SYS_exit_group);
	return bad != 0;
}

/* ---- stress ---- */
static volatile int stop;
static long stress_counts[8];

NOINL void *stress_worker(void *arg)
{
	long id = (long)arg, c = 0;
	struct timespec ts = { 0, 10000 };

	while (!stop) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
		sink += sys2(SYS_getpid, 0, 0);
		nanosleep(&ts, NULL);
		c++;
	}
	stress_counts[id] = c;
	return NULL;
}

NOINL int do_stress(int secs)
{
	pthread_t t[8];
	long total = 0;

	for (long i = 0; i < 8; i++)
		if (pthread_create(&t[i], NULL, stress_worker, (void *)i))
			return 1;
	sleep(secs);
	stop = 1;
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		total += stress_counts[i];
	}
	printf("ustest stress pid=%d rounds=%ld\n", getpid(), total);
	return total == 0;
}

/* ---- maps ---- */
/* ---- gang ---- */
NOINL int do_gang(int n, const char *file)
{
	char tmp[4096];
	int go[2], bad = 0;
	sigset_t usr1;
	FILE *f;
	char c;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (pipe(go) || sigprocmask(SIG_BLOCK, &usr1, NULL))
		return 1;
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	f = fopen(tmp, "w");
	if (!f)
		return 1;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (!pid) {
			close(go[1]);
			if (read(go[0], &c, 1) != 1)
				_exit(1);
			_exit(do_chain(3));
		}
		fprintf(f, "%d %d\n", i, pid);
	}
	close(go[0]);
	if (fclose(f) || rename(tmp, file))
		return 1;
	if (sigwaitinfo(&usr1, NULL) < 0)
		return 1;
	for (int i = 0; i < n; i++)
		if (write(go[1], "g", 1) != 1)
			return 1;
	for (int i = 0; i < n; i++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	return bad != 0;
}

/* ---- signal ---- */
static volatile int sig_seen;

static void sig_handler(int sig)
{
	(void)sig;
	sig_seen++;
}

NOINL long sig_raise(int n)
{
	long pid = sys2(SYS_getpid, 0, 0), r = 0;

	for (int i = 0; i < n; i++) {
		r += sys2(SYS_kill, pid, SIGUSR1);
		after_syscall(r);
	}
	BARRIER();
	return r;
}

NOINL long sig_level1(int n)
{
	long r = sig_raise(n);

	BARRIER();
	return r + 1;
}

NOINL int do_signal(int n)
{
	struct sigaction sa = { .sa_handler = sig_handler };

	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	sink = sig_level1(n);
	printf("ustest signal pid=%d iterations=%d syscall=%d delivered=%d\n", getpid(), n,
	       SYS_kill, sig_seen);
	return sig_seen != n;
}

static int do_maps(int n, const char *file)
{
	char buf[4096];
	int in = open("/proc/self/maps", O_RDONLY);
	int out = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t r;

	if (in < 0 || out < 0)
		return 1;
	while ((r = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, r) != r)
			return 1;
	close(in);
	close(out);
	return r < 0 || do_chain(n);
}

/* ---- uprobe ---- */
static volatile int up_done;

NOINL long up_target(long i)
{
	BARRIER();
	return i * 3;
}

NOINL long up_level1(long i)
{
	long r = up_target(i);

	BARRIER();
	return r + 1;
}

/* The main thread, moved between CPU 0 and 1 until it is done */
NOINL void *up_mover(void *arg)
{
	int tid = *(int *)arg, i = 0;

	while (!up_done)
		pin(tid, i++ % 2);
	return NULL;
}

/* ---- ipi ---- */
static volatile int ipi_done, ipi_started;

/*
 * On CPU 1: interrupts CPU 0 whenever it runs the process, in user space or
 * in the kernel, until do_ipi is done: taking write access away from a page
 * the process touched flushes the TLB of every CPU that runs its mm, by IPI.
 */
NOINL void *ipi_sender(void *arg)
{
	char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long sent = 0;

	(void)arg;
	pin(0, 1);
	if (page == MAP_FAILED)
		return NULL;
	while (!ipi_done) {
		page[0] = 1;
		ipi_started = 1;
		sent += mprotect(page, 4096, PROT_READ) == 0;
		mprotect(page, 4096, PROT_READ | PROT_WRITE);
	}
	munmap(page, 4096);
	return (void *)sent;
}

NOINL long ipi_leaf(void)
{
	long r = sys2(SYS_getppid, 0, 0);

	after_syscall(r);
	return r;
}

NOINL long ipi_level1(void)
{
	long r = ipi_leaf();

	BARRIER();
	return r + 1;
}

NOINL int do_ipi(int n)
{
	pthread_t t;
	void *sent;

	if (pin(0, 0) || pthread_create(&t, NULL, ipi_sender, NULL))
		return 1;
	while (!ipi_started)
		sched_yield();
	for (int i = 0; i < n; i++)
		sink += ipi_level1();
	ipi_done = 1;
	pthread_join(t, &sent);
	printf("ustest ipi pid=%d iterations=%d syscall=%d sent=%ld\n", getpid(), n, SYS_getppid,
	       (long)sent);
	return 0;
}

/* The offset in the file of the code at @addr, from /proc/self/maps */
static long file_offset(unsigned long addr)
{
	unsigned long start, end, off;
	char line[512];
	long ret = -1;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %lx", &start, &end, &off) == 3 &&
		    addr >= start && addr < end) {
			ret = (long)(addr - start + off);
			break;
		}
	if (f)
		fclose(f);
	return ret;
}

NOINL int do_uprobe(int n)
{
	int tid = (int)syscall(SYS_gettid);
	pthread_t t;

	if (n > 0 && pthread_create(&t, NULL, up_mover, &tid))
		return 1;
	for (int i = 0; i < n; i++)
		sink += up_level1(i);
	up_done = 1;
	if (n > 0)
		pthread_join(t, NULL);
	printf("ustest uprobe pid=%d iterations=%d offset=%#lx\n", getpid(), n,
	       file_offset((unsigned long)up_target));
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 10;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		goto usage;
	if (!strcmp(argv[1], "chain"))
		return do_chain(n);
	if (!strcmp(argv[1], "flood") && argc > 3)
		return do_flood(n, argv[3]);
	if (!strcmp(argv[1], "migrate"))
		return do_migrate(n);
	if (!strcmp(argv[1], "exiter"))
		return do_exiter(n);
	if (!strcmp(argv[1], "stress"))
		return do_stress(n);
	if (!strcmp(argv[1], "maps") && argc > 3)
		return do_maps(n, argv[3]);
	if (!strcmp(argv[1], "deep"))
		return do_deep(n);
	if (!strcmp(argv[1], "signal"))
		return do_signal(n);
	if (!strcmp(argv[1], "gang") && argc > 3)
		return do_gang(n, argv[3]);
	if (!strcmp(argv[1], "snap"))
		return do_snap(n);
	if (!strcmp(argv[1], "threads"))
		return do_threads(n);
	if (!strcmp(argv[1], "uprobe"))
		return do_uprobe(n);
	if (!strcmp(argv[1], "ipi"))
		return do_ipi(n);
usage:
	fprintf(stderr, "usage: ustest chain|flood|migrate|exiter|stress|maps|signal|gang|snap|threads|uprobe|ipi N "
		"[MARKER|FILE]\n");
	return 2;
}
