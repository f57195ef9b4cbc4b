// SPDX-License-Identifier: GPL-2.0
/*
 * rawdump FILE: copy a tracefs per_cpu/cpuN/trace_pipe_raw file to stdout
 * without blocking once it is empty (cat would wait for more data).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: rawdump FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n == 0 || (n < 0 && errno == EAGAIN))
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("read");
			return 1;
		}
		if (write(1, buf, n) != n) {
			perror("write");
			return 1;
		}
	}
}
