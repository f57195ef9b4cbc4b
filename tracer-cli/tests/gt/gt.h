/* Ground truth for tests/host_symbolize.rs, written by the traced program
 * itself, independently of ustack: each task appends "tid tgid" to
 * $GT_DIR/tids, each process copies /proc/self/maps to $GT_DIR/maps.<pid>
 * before it exits (after everything it maps is mapped). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static void gt_tid(void)
{
	char path[512], line[64];
	const char *dir = getenv("GT_DIR");
	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/tids", dir);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	int n = snprintf(line, sizeof(line), "%ld %d\n", (long)syscall(SYS_gettid), getpid());
	if (fd >= 0) {
		if (write(fd, line, n) != n)
			abort();
		close(fd);
	}
}

static void gt_maps_named(const char *name)
{
	char path[512], buf[65536];
	const char *dir = getenv("GT_DIR");
	if (!dir)
		return;
	gt_tid();
	snprintf(path, sizeof(path), "%s/%s.%d", dir, name, getpid());
	int in = open("/proc/self/maps", O_RDONLY);
	int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			abort();
	close(in);
	close(out);
}

/* Writes the maps, then stays alive GT_LINGER_MS ms if set (so that a
 * recorder that did not start the process has time to read its maps). */
static void gt_maps(void)
{
	const char *linger = getenv("GT_LINGER_MS");
	gt_maps_named("maps");
	if (linger)
		usleep(atoi(linger) * 1000);
}

/* A call chain of known functions down to getppid(2). */
__attribute__((noinline)) void gt_leaf(void) { syscall(SYS_getppid); asm volatile(""); }
__attribute__((noinline)) void gt_depth3(void) { gt_leaf(); asm volatile(""); }
__attribute__((noinline)) void gt_depth2(void) { gt_depth3(); asm volatile(""); }
__attribute__((noinline)) void gt_depth1(void) { gt_depth2(); asm volatile(""); }
