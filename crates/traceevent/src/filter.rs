//! One libtraceevent event filter (`trace-cmd report -F`).

use std::ffi::CString;

use ustack_traceevent_sys as sys;

use crate::tep::{Handle, Record, Tep, TepError};

mod screen;

/// What [`Filter::test`] found for a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterResult {
    /// The record matches.
    Match,
    /// The record does not match.
    Miss,
    /// The filter has nothing for this record's event.
    NotFound,
    /// The filter is empty.
    NoFilter,
    /// Another libtraceevent error code.
    Error(i32),
}

/// A `tep_event_filter` of one handle.
///
/// # Invariants
/// `raw` comes from `tep_filter_alloc` on the handle `h`, which it keeps
/// alive, and is freed once, in Drop.
pub struct Filter {
    raw: *mut sys::tep_event_filter,
    h: std::rc::Rc<Handle>,
}

impl Filter {
    /// A filter of `tep` from the text `s` (`"sched_switch: prev_pid != 0"`).
    pub fn new(tep: &Tep, s: &str) -> Result<Filter, TepError> {
        if let Some(why) = screen::problem(s) {
            return Err(TepError(format!("bad filter {s:?}: {why}")));
        }
        let c = CString::new(s).map_err(|_| TepError(format!("filter {s:?} contains NUL")))?;
        let h = tep.handle();
        // SAFETY: the handle is valid (Handle invariant); the result is
        // checked.
        let raw = unsafe { sys::tep_filter_alloc(h.tep) };
        if raw.is_null() {
            return Err(TepError("cannot allocate a filter".into()));
        }
        let f = Filter { raw, h };
        // SAFETY: f.raw is a live filter and c is NUL-terminated.
        let r = unsafe { sys::tep_filter_add_filter_str(f.raw, c.as_ptr()) };
        if r < 0 {
            let mut buf = [0u8; 200];
            // SAFETY: buf is writable for its length; the library writes a
            // NUL-terminated string into at most that many bytes.
            unsafe { sys::tep_filter_strerror(f.raw, r, buf.as_mut_ptr().cast(), buf.len()) };
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return Err(TepError(format!(
                "bad filter {s:?}: {}",
                String::from_utf8_lossy(&buf[..end])
            )));
        }
        Ok(f)
    }

    /// Tests `rec` against the filter.
    pub fn test(&self, rec: &mut Record<'_>) -> FilterResult {
        rec.prepare(&self.h.reaches.borrow());
        // SAFETY: self.raw is live (type invariant) and the record's data
        // is borrowed for the call and only read (Record invariant), as far
        // as the event's format makes libtraceevent read (`prepare`).
        let r = unsafe { sys::tep_filter_match(self.raw, rec.as_mut_ptr()) };
        match r {
            sys::TEP_ERRNO__FILTER_MATCH => FilterResult::Match,
            sys::TEP_ERRNO__FILTER_MISS => FilterResult::Miss,
            sys::TEP_ERRNO__FILTER_NOT_FOUND => FilterResult::NotFound,
            sys::TEP_ERRNO__NO_FILTER => FilterResult::NoFilter,
            e => FilterResult::Error(e),
        }
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        // SAFETY: allocated by tep_filter_alloc and freed once (invariant).
        unsafe { sys::tep_filter_free(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tep::tests::{event, tep_with};

    #[test]
    fn filters_match_miss_and_report_bad_text() {
        let tep = tep_with(&[]);
        let f = Filter::new(&tep, "ev: value > 3").unwrap();
        let yes = event(42, 77, 5);
        let no = event(42, 77, 2);
        let other = event(43, 77, 2);
        assert_eq!(f.test(&mut Record::new(&yes, 1, 0)), FilterResult::Match);
        assert_eq!(f.test(&mut Record::new(&no, 1, 0)), FilterResult::Miss);
        assert_eq!(
            f.test(&mut Record::new(&other, 1, 0)),
            FilterResult::NotFound
        );
        let e = Filter::new(&tep, "nosuch: value > 1").err().unwrap();
        assert_eq!(e.0, "bad filter \"nosuch: value > 1\": no event found");
        let e = Filter::new(&tep, "ev: value >").err().unwrap();
        assert_eq!(
            e.0,
            "bad filter \"ev: value >\": expression ends in an operator"
        );
    }
}
