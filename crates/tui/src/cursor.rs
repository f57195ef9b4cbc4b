//! The selection of a scrolling list pane.

/// Where a list pane is: the selected row and the first row shown.
///
/// Invariant after [`ListCursor::fit`]: `sel < len` (or 0 for an empty
/// list) and `off <= sel < off + rows`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListCursor {
    /// Selected row.
    pub sel: usize,
    /// First shown row.
    pub off: usize,
}

impl ListCursor {
    /// Keeps the selection inside a list of `len` rows and in the `rows`
    /// the pane shows, scrolling as little as possible.
    pub fn fit(&mut self, len: usize, rows: usize) {
        let rows = rows.max(1);
        self.sel = self.sel.min(len.saturating_sub(1));
        self.off = self.off.min(len.saturating_sub(rows));
        if self.sel < self.off {
            self.off = self.sel;
        } else if self.sel >= self.off + rows {
            self.off = self.sel + 1 - rows;
        }
    }

    /// Moves the selection by `delta` rows inside a list of `len` rows.
    pub fn step(&mut self, delta: isize, len: usize) {
        self.sel = if len == 0 {
            0
        } else {
            (self.sel as isize + delta).clamp(0, len as isize - 1) as usize
        };
    }

    /// The list row shown on pane row `r`, if the list has it.
    pub fn row_at(&self, r: usize, len: usize) -> Option<usize> {
        let i = self.off + r;
        (i < len).then_some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_scrolls_as_little_as_possible() {
        let mut c = ListCursor { sel: 12, off: 0 };
        c.fit(20, 5);
        assert_eq!(c, ListCursor { sel: 12, off: 8 });
        c.sel = 9;
        c.fit(20, 5);
        assert_eq!(c, ListCursor { sel: 9, off: 8 });
        c.sel = 3;
        c.fit(20, 5);
        assert_eq!(c, ListCursor { sel: 3, off: 3 });
        // the list shrank under the selection
        c.sel = 30;
        c.fit(6, 5);
        assert_eq!(c, ListCursor { sel: 5, off: 1 });
        c.fit(0, 5);
        assert_eq!(c, ListCursor { sel: 0, off: 0 });
    }

    #[test]
    fn step_and_row_at_stay_in_the_list() {
        let mut c = ListCursor::default();
        c.step(-3, 4);
        assert_eq!(c.sel, 0);
        c.step(10, 4);
        assert_eq!(c.sel, 3);
        c.step(1, 0);
        assert_eq!(c.sel, 0);
        let c = ListCursor { sel: 0, off: 2 };
        assert_eq!(c.row_at(1, 4), Some(3));
        assert_eq!(c.row_at(2, 4), None);
    }
}
