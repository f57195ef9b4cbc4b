//! trace-cmd's `-F` filters and their `-v` inverses, as `trace-cmd report`
//! applies them, through libtraceevent's filter engine. `report` and the
//! stitched views ([`crate::text::Texts`]) both select events with it.

use ustack_traceevent as tep;
use ustack_traceevent::FilterResult;

/// The `-F` filters (`pos`: keep what one of them matches) and the `-v`
/// ones (`neg`: hide what one of them matches) of a report.
#[derive(Default)]
pub struct EventFilters {
    pos: Vec<tep::Filter>,
    neg: Vec<tep::Filter>,
}

impl std::fmt::Debug for EventFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "EventFilters({} -F, {} -v)",
            self.pos.len(),
            self.neg.len()
        )
    }
}

impl EventFilters {
    /// Compiles `pos` and `neg` against the formats `tep` has; a filter
    /// libtraceevent does not accept is a one-line error.
    pub fn new(tep: &tep::Tep, pos: &[String], neg: &[String]) -> Result<EventFilters, String> {
        let compile = |list: &[String]| -> Result<Vec<tep::Filter>, String> {
            list.iter()
                .map(|s| tep::Filter::new(tep, s).map_err(|e| e.0))
                .collect()
        };
        Ok(EventFilters {
            pos: compile(pos)?,
            neg: compile(neg)?,
        })
    }

    /// No filter at all: every event is kept.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty() && self.neg.is_empty()
    }

    /// Whether a `-F` filter matches `rec`, or there is none. An event that
    /// no filter names does not match one.
    pub fn kept(&self, rec: &mut tep::Record<'_>) -> bool {
        self.pos.is_empty() || any(&self.pos, rec)
    }

    /// Whether a `-v` filter matches `rec`.
    pub fn hidden(&self, rec: &mut tep::Record<'_>) -> bool {
        any(&self.neg, rec)
    }

    /// Whether `rec` is shown: kept and not hidden.
    pub fn selects(&self, rec: &mut tep::Record<'_>) -> bool {
        self.kept(rec) && !self.hidden(rec)
    }
}

/// Whether a filter of `list` matches `rec` (libtraceevent: it matches, or
/// the filter is empty).
fn any(list: &[tep::Filter], rec: &mut tep::Record<'_>) -> bool {
    list.iter()
        .any(|f| matches!(f.test(rec), FilterResult::NoFilter | FilterResult::Match))
}
