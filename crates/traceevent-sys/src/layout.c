/* Sizes and offsets of the structs the Rust declarations spell out, taken
 * from the installed headers; compared with the Rust side by the `layout`
 * test of lib.rs. Keep the order in step with that test. */
#include <stddef.h>
#include <event-parse.h>
#include <trace-seq.h>

const size_t ustack_tep_layout[12] = {
	sizeof(struct tep_record),
	offsetof(struct tep_record, offset),
	offsetof(struct tep_record, missed_events),
	offsetof(struct tep_record, record_size),
	offsetof(struct tep_record, size),
	offsetof(struct tep_record, data),
	offsetof(struct tep_record, cpu),
	offsetof(struct tep_record, ref_count),
	offsetof(struct tep_record, priv),
	sizeof(struct trace_seq),
	offsetof(struct trace_seq, len),
	offsetof(struct trace_seq, state),
};

/* Where the wrapper sets TEP_EVENT_FL_* bits of an event. */
const size_t ustack_tep_event_flags_offset = offsetof(struct tep_event, flags);
/* Where the wrapper reads whether a plugin prints an event. */
const size_t ustack_tep_event_handler_offset = offsetof(struct tep_event, handler);
