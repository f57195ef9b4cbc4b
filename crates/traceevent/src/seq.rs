//! An owned `trace_seq`.

use std::ffi::CString;

use ustack_traceevent_sys::{
    trace_seq, trace_seq_destroy, trace_seq_init, trace_seq_puts, trace_seq_reset,
};

/// An owned `trace_seq`: the text buffer libtraceevent prints into.
///
/// # Invariants
/// `s` was initialized by `trace_seq_init` and is destroyed once, in Drop.
pub struct TraceSeq {
    s: Box<trace_seq>,
}

impl Default for TraceSeq {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceSeq {
    /// A new, empty sequence.
    pub fn new() -> TraceSeq {
        let mut s = Box::new(trace_seq {
            buffer: std::ptr::null_mut(),
            buffer_size: 0,
            len: 0,
            readpos: 0,
            state: 0,
        });
        // SAFETY: s points to writable memory of the right layout.
        unsafe { trace_seq_init(&mut *s) };
        TraceSeq { s }
    }

    /// The raw pointer, for `tep_print_event`.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut trace_seq {
        &mut *self.s
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        if self.s.buffer.is_null() || self.s.len == 0 {
            return &[];
        }
        // SAFETY: buffer holds at least len initialized bytes (trace_seq
        // invariant maintained by libtraceevent).
        unsafe { std::slice::from_raw_parts(self.s.buffer as *const u8, self.s.len as usize) }
    }

    /// Empties the sequence, keeping its buffer.
    pub fn reset(&mut self) {
        // SAFETY: the seq was initialized by trace_seq_init (type invariant).
        unsafe { trace_seq_reset(&mut *self.s) }
    }

    /// Appends a string (one with a NUL byte is left out).
    pub fn puts(&mut self, s: &str) {
        if let Ok(c) = CString::new(s) {
            // SAFETY: seq initialized (type invariant); c is NUL-terminated.
            unsafe { trace_seq_puts(&mut *self.s, c.as_ptr()) };
        }
    }
}

impl Drop for TraceSeq {
    fn drop(&mut self) {
        // SAFETY: initialized by trace_seq_init and not used after this.
        unsafe { trace_seq_destroy(&mut *self.s) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_seq_fields_are_where_the_library_writes() {
        let mut s = TraceSeq::new();
        s.puts("abc");
        assert_eq!(s.as_bytes(), b"abc");
        s.reset();
        assert_eq!(s.as_bytes(), b"");
    }
}
