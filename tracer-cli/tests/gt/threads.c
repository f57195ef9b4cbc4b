/* Threads that start at once (a barrier), migrate, and make syscalls from a
 * deep call chain; then the process exits. */
#include <pthread.h>
#include "gt.h"

#define NTHREADS 4
static pthread_barrier_t start;
static int loops = 100;

static void *worker(void *arg)
{
	(void)arg;
	gt_tid();
	pthread_barrier_wait(&start);
	for (int i = 0; i < loops; i++) {
		gt_depth1();
		if (i % 10 == 0)
			sched_yield();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	if (argc > 1)
		loops = atoi(argv[1]);
	pthread_barrier_init(&start, NULL, NTHREADS + 1);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	pthread_barrier_wait(&start);
	for (int i = 0; i < loops; i++)
		gt_depth1();
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	gt_maps();
	return 0;
}
