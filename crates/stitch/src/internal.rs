//! Kernel frames that belong to the tracing machinery rather than to the
//! traced code: the event's `trace_event_raw_event_*` probe, the ftrace
//! callback chain and the stack-saving helpers that run only because the
//! event is traced. `perf report` hides the same kind of frames; the
//! stitched views (`report --stacks|--json|--folded`) and the TUI hide them
//! unless asked to show them. This is the one list of them.

use ustack_symbolize::Frame;

/// Symbol prefixes of tracing-internal kernel functions.
const PREFIXES: &[&str] = &[
    "trace_event_raw_event_",
    "perf_trace_",
    "__traceiter_",
    "trace_event_buffer_",
    "trace_buffer_unlock_commit",
    "__trace_stack",
    "ftrace_",
    "__ftrace_",
    "arch_ftrace_",
    "function_trace_call",
    "function_stack_trace_call",
    "stack_trace_save",
    "arch_stack_walk",
    "event_triggers_call",
    "stacktrace_trigger",
    "trace_graph_",
];

/// Whether the kernel function `symbol` is tracing-internal.
pub fn is_internal_symbol(symbol: &str) -> bool {
    PREFIXES.iter().any(|p| symbol.starts_with(p))
}

/// Whether the kernel frame `f` is tracing-internal (a frame without a
/// symbol never is).
pub fn is_internal(f: &Frame) -> bool {
    f.symbol.as_deref().is_some_and(is_internal_symbol)
}

/// The frames of `frames` to show: all of them with `internal`, else those
/// that are not [`is_internal`].
pub fn shown(frames: &[Frame], internal: bool) -> impl DoubleEndedIterator<Item = &Frame> {
    frames.iter().filter(move |f| internal || !is_internal(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(sym: Option<&str>) -> Frame {
        Frame {
            symbol: sym.map(Into::into),
            ..Frame::unknown(1)
        }
    }

    #[test]
    fn probes_and_stack_savers_are_internal_syscalls_are_not() {
        for s in [
            "trace_event_raw_event_sys_enter",
            "ftrace_syscall_enter",
            "stack_trace_save",
            "trace_buffer_unlock_commit_regs",
        ] {
            assert!(is_internal_symbol(s), "{s}");
        }
        for s in ["do_syscall_64", "__x64_sys_write", "schedule", "trace_me"] {
            assert!(!is_internal_symbol(s), "{s}");
        }
        let fs = [
            frame(Some("stack_trace_save")),
            frame(None),
            frame(Some("do_syscall_64")),
        ];
        let names = |internal| {
            shown(&fs, internal)
                .map(|f| f.symbol.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(false), [None, Some("do_syscall_64".to_string())]);
        assert_eq!(names(true).len(), 3);
    }
}
