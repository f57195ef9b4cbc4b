// SPDX-License-Identifier: GPL-2.0-only
/*
 * libtraceevent plugin for the deferred user stack entries of ustack's
 * kernel patches: ftrace:user_unwind_cookie, ftrace:user_unwind_stack and
 * ftrace:user_unwind_stack_snapshot (a stack entry with the user registers
 * and stack bytes of its kernel entry).
 *
 * The kernel's print format of user_unwind_stack prints the stack with
 * __print_array(), which libtraceevent renders as decimal numbers
 * ("stack=140486425527183 94482977763847"). This plugin prints the
 * addresses in hex instead, innermost frame first:
 *
 *   user_unwind_stack:    cookie=300000002 prev=300000001 links=1 stack=0x7fc5d3a2b18f 0x55e7c6d1e507
 *   user_unwind_cookie:   cookie=300000002
 *   user_unwind_stack_snapshot: cookie=300000003 prev=0 links=0 sp=0x7ffd2c1e0a58 bp=0x7ffd2c1e0a90 len=128 stack=0x7fc5d3a2b18f
 *
 * prev and links are printed as the kernel prints them (kernels whose
 * stack entries have these fields): a reader of the text needs them to
 * tell which stack covers the events after a linking stack entry, by the
 * rules for text of Documentation/trace/user-unwind.rst.
 *
 * trace-cmd, KernelShark and tracer-cli load it from the libtraceevent
 * plugin directory (see the Makefile: make install).
 */
#include <stdio.h>
#include <event-parse.h>
#include <trace-seq.h>

/* "cookie=%llx": the cookie is opaque, hex shows its cpu/counter halves. */
static int print_cookie(struct trace_seq *s, struct tep_record *record,
			struct tep_event *event)
{
	unsigned long long cookie;

	if (tep_get_field_val(s, event, "cookie", record, &cookie, 1))
		return -1;
	trace_seq_printf(s, "cookie=%llx", cookie);
	return 0;
}

static int user_unwind_cookie_handler(struct trace_seq *s,
				      struct tep_record *record,
				      struct tep_event *event, void *context)
{
	(void)context;
	return print_cookie(s, record, event) ? trace_seq_putc(s, '!') : 0;
}

/* " stack=0x... 0x...", innermost frame first */
static int print_stack(struct trace_seq *s, struct tep_record *record,
		       struct tep_event *event)
{
	struct tep_handle *tep = event->tep;
	int size = tep_get_long_size(tep);
	unsigned char *data;
	int len = 0;
	int i;

	trace_seq_puts(s, " stack=");
	data = tep_get_field_raw(s, event, "stack", record, &len, 1);
	if (!data)
		return trace_seq_putc(s, '!');
	if (size != 4 && size != 8)
		size = 8;
	/* Never read past the record, whatever the __data_loc word says. */
	if (data < (unsigned char *)record->data ||
	    data + len > (unsigned char *)record->data + record->size)
		return trace_seq_putc(s, '!');
	for (i = 0; i + size <= len; i += size)
		trace_seq_printf(s, "%s0x%llx", i ? " " : "",
				 tep_read_number(tep, data + i, size));
	return 0;
}

/*
 * " prev=%llx links=%u", as the kernel's print format has them; nothing for
 * a stack entry without these fields.
 */
static int print_links(struct trace_seq *s, struct tep_record *record,
		       struct tep_event *event)
{
	unsigned long long prev, links;

	if (!tep_find_field(event, "prev") || !tep_find_field(event, "links"))
		return 0;
	if (tep_get_field_val(s, event, "prev", record, &prev, 1) ||
	    tep_get_field_val(s, event, "links", record, &links, 1))
		return -1;
	trace_seq_printf(s, " prev=%llx links=%u", prev, (unsigned int)links);
	return 0;
}

static int user_unwind_stack_handler(struct trace_seq *s,
				     struct tep_record *record,
				     struct tep_event *event, void *context)
{
	(void)context;
	if (print_cookie(s, record, event) || print_links(s, record, event))
		return trace_seq_putc(s, '!');
	return print_stack(s, record, event);
}

static int user_unwind_stack_snapshot_handler(struct trace_seq *s,
					      struct tep_record *record,
					      struct tep_event *event,
					      void *context)
{
	unsigned long long sp, bp;
	int len = 0;

	(void)context;
	if (print_cookie(s, record, event) || print_links(s, record, event) ||
	    tep_get_field_val(s, event, "sp", record, &sp, 1) ||
	    tep_get_field_val(s, event, "bp", record, &bp, 1) ||
	    !tep_get_field_raw(s, event, "data", record, &len, 1))
		return trace_seq_putc(s, '!');
	trace_seq_printf(s, " sp=0x%llx bp=0x%llx len=%d", sp, bp, len);
	return print_stack(s, record, event);
}

int TEP_PLUGIN_LOADER(struct tep_handle *tep)
{
	tep_register_event_handler(tep, -1, "ftrace", "user_unwind_cookie",
				   user_unwind_cookie_handler, NULL);
	tep_register_event_handler(tep, -1, "ftrace", "user_unwind_stack",
				   user_unwind_stack_handler, NULL);
	tep_register_event_handler(tep, -1, "ftrace",
				   "user_unwind_stack_snapshot",
				   user_unwind_stack_snapshot_handler, NULL);
	return 0;
}

void TEP_PLUGIN_UNLOADER(struct tep_handle *tep)
{
	tep_unregister_event_handler(tep, -1, "ftrace", "user_unwind_cookie",
				     user_unwind_cookie_handler, NULL);
	tep_unregister_event_handler(tep, -1, "ftrace", "user_unwind_stack",
				     user_unwind_stack_handler, NULL);
	tep_unregister_event_handler(tep, -1, "ftrace",
				     "user_unwind_stack_snapshot",
				     user_unwind_stack_snapshot_handler, NULL);
}
