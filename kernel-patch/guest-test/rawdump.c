/* Decode trace_pipe_raw pages with the system's libtraceevent (kbuffer + tep). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>
#include <traceevent/trace-seq.h>

static char *slurp(const char *p, size_t *n)
{
	FILE *f = fopen(p, "r");
	char *b = malloc(1 << 22);
	if (!f) { perror(p); exit(2); }
	*n = fread(b, 1, 1 << 22, f);
	fclose(f);
	return b;
}

int main(int argc, char **argv)
{
	/* usage: rawdump PAGESIZE RAWFILE FMT... */
	struct tep_handle *tep = tep_alloc();
	int psize = atoi(argv[1]);
	size_t n, rn;
	char *raw;
	tep_set_long_size(tep, 8);
	tep_set_page_size(tep, psize);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	for (int i = 3; i < argc; i++) {
		char *b = slurp(argv[i], &n);
		if (tep_parse_event(tep, b, n, "ftrace")) {
			printf("PARSE-FAILED %s\n", argv[i]);
			return 1;
		}
	}
	raw = slurp(argv[2], &rn);
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	for (size_t off = 0; off + psize <= rn; off += psize) {
		unsigned long long ts;
		void *data;
		kbuffer_load_subbuffer(kb, raw + off);
		while ((data = kbuffer_read_event(kb, &ts))) {
			struct tep_record r = { 0 };
			struct trace_seq s;
			r.data = data;
			r.size = kbuffer_event_size(kb);
			r.ts = ts;
			struct tep_event *e = tep_find_event_by_record(tep, &r);
			if (e) {
				trace_seq_init(&s);
				tep_print_event(tep, &s, &r, "%s %d %s", TEP_PRINT_NAME, TEP_PRINT_PID, TEP_PRINT_INFO);
				trace_seq_terminate(&s);
				printf("EV %llu %s\n", ts, s.buffer);
				trace_seq_destroy(&s);
			}
			kbuffer_next_event(kb, NULL);
		}
	}
	return 0;
}
