// Ground truth for the unwinder, C++: the marked call is made from a
// lambda under std::sort, after an exception was thrown and caught on
// the way (see truth.c for the protocol).
#include <algorithm>
#include <execinfo.h>
#include <stdexcept>
#include <unistd.h>
#include <vector>

static volatile int sink;

__attribute__((noinline)) static void mark()
{
	void *chain[256];
	int n = backtrace(chain, 256);
	write(-1, chain, 8 * n);
}

__attribute__((noinline)) static void thrower(int v)
{
	if (v % 2)
		throw std::runtime_error("odd");
	sink += v;
}

__attribute__((noinline)) static void caught(int v)
{
	try {
		thrower(v);
	} catch (const std::exception &) {
		sink++;
	}
	mark();
}

int main()
{
	std::vector<int> v{ 5, 3, 9, 1, 7, 2, 8 };
	int calls = 0;
	std::sort(v.begin(), v.end(), [&](int a, int b) {
		if (calls++ < 4)
			caught(a + b);
		return a < b;
	});
	return sink == -1;
}
