// SPDX-License-Identifier: GPL-2.0
/*
 * rawdump FILE: copy a tracefs per_cpu/cpuN/trace_pipe_raw file to stdout
 * without blocking once it is empty (cat would wait for more data).
 * rawdump IN OUT [IN OUT]...: copy each IN to OUT the same way, in one
 * process (under TCG an exec costs more than the copy: case 14 dumps 100
 * instances).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static int copy(const char *in, int out)
{
	static char buf[1 << 16];
	int fd = open(in, O_RDONLY | O_NONBLOCK);

	if (fd < 0) {
		perror(in);
		return 1;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n == 0 || (n < 0 && errno == EAGAIN))
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror(in);
			close(fd);
			return 1;
		}
		if (write(out, buf, n) != n) {
			perror("write");
			close(fd);
			return 1;
		}
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 0;

	if (argc == 2)
		return copy(argv[1], 1);
	if (argc < 3 || argc % 2 == 0) {
		fprintf(stderr, "usage: rawdump FILE | rawdump IN OUT [IN OUT]...\n");
		return 2;
	}
	for (int i = 1; i < argc; i += 2) {
		int out = open(argv[i + 1], O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (out < 0) {
			perror(argv[i + 1]);
			rc = 1;
			continue;
		}
		rc |= copy(argv[i], out);
		close(out);
	}
	return rc;
}
