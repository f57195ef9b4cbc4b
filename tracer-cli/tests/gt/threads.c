/* Threads that start at once (a barrier), migrate, and make syscalls from a
 * deep call chain (LOOPS times, sleeping DELAY_US between them); then the
 * process exits. Arguments: [LOOPS [DELAY_US]]. */
#include <pthread.h>
#include "gt.h"

#define NTHREADS 4
static pthread_barrier_t start;
static int loops = 100;
static int delay_us;

static void *worker(void *arg)
{
	(void)arg;
	gt_tid();
	pthread_barrier_wait(&start);
	for (int i = 0; i < loops; i++) {
		gt_depth1();
		if (delay_us)
			usleep(delay_us);
		else if (i % 10 == 0)
			sched_yield();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	if (argc > 1)
		loops = atoi(argv[1]);
	if (argc > 2)
		delay_us = atoi(argv[2]);
	pthread_barrier_init(&start, NULL, NTHREADS + 1);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	pthread_barrier_wait(&start);
	for (int i = 0; i < loops; i++) {
		gt_depth1();
		if (delay_us)
			usleep(delay_us);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	gt_maps();
	return 0;
}
