/* Calls into libgt.so, linked (shlib) or loaded with dlopen after start
 * (dlopen). */
#include <dlfcn.h>
#include <string.h>
#include "gt.h"

void lib_run(int loops);

int main(int argc, char **argv)
{
	int loops = argc > 2 ? atoi(argv[2]) : 50;
	if (argc > 1 && !strcmp(argv[1], "dlopen")) {
		for (int i = 0; i < loops; i++)
			gt_depth1();
		void *h = dlopen("./libgtdl.so", RTLD_NOW);
		if (!h)
			return 2;
		void (*f)(int) = (void (*)(int))dlsym(h, "lib_run");
		if (!f)
			return 3;
		f(loops);
	} else {
#ifdef LINKED
		lib_run(loops);
#endif
	}
	gt_maps();
	return 0;
}
