//! Decoder of one ring-buffer page (sub-buffer), as read from
//! `per_cpu/cpuN/trace_pipe_raw` and stored in trace.dat.
//!
//! Page layout (64-bit kernel): u64 timestamp, u64 commit word (size of the
//! data in the low 27 bits, [`MISSING_EVENTS`] and [`MISSING_STORED`] flags in
//! bits 31 and 30), then the events. Each event starts with a u32 header
//! word: type_len in the low 5 bits, time_delta in the high 27 bits.
//!
//! - type_len 1..=28: data of `type_len * 4` bytes follows;
//! - type_len 0: `array[0]` holds the length (including itself), data follows it;
//! - 29: padding, `array[0]` holds the length of the padding;
//! - 30: time extend, `array[0] << 27 | time_delta` is added to the time;
//! - 31: absolute time stamp, `array[0] << 27 | time_delta` replaces the time
//!   (its 5 top bits come from the current time).
//!
//! Decoding never allocates and never panics: a malformed page yields an
//! [`Error`] with the offset in the page.

use crate::dat::ring::{
    COMMIT_MASK, MISSING_EVENTS, MISSING_STORED, TYPE_PADDING, TYPE_TIME_EXTEND, TYPE_TIME_STAMP,
};
use crate::error::{Error, Result};
use crate::header::HeaderPage;

pub use crate::dat::ring::{
    MISSING_EVENTS as FLAG_MISSING_EVENTS, MISSING_STORED as FLAG_MISSING_STORED,
};

const TS_SHIFT: u32 = 27;
const TS_MSB: u64 = 0xf8 << 56;

#[inline]
pub(crate) fn rd_u32(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

#[inline]
pub(crate) fn rd_u64(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8)
        .map(|s| u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
}

#[inline]
fn rd_long(b: &[u8], off: usize, long: usize) -> Option<u64> {
    if long == 8 {
        rd_u64(b, off)
    } else {
        rd_u32(b, off).map(u64::from)
    }
}

/// Events lost before a page, from its commit flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// No events were lost before this page.
    None,
    /// Events were lost but the kernel did not store how many.
    Unknown,
    /// This many events were lost.
    Count(u64),
}

/// One decoded page.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    data: &'a [u8],
    timestamp: u64,
    commit: u64,
    missed: Missed,
}

/// One item of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageItem<'a> {
    /// An event: its absolute timestamp and its payload (starting with
    /// `common_type`). The payload length is a multiple of 4, as the ring
    /// buffer stores it.
    Event {
        /// Timestamp after applying this event's delta.
        ts: u64,
        /// Offset of the payload in the page data area.
        offset: usize,
        /// The payload.
        data: &'a [u8],
    },
    /// A time extend; `ts` is the time after it.
    TimeExtend {
        /// Time after the extend.
        ts: u64,
    },
    /// An absolute time stamp.
    TimeStamp {
        /// The new time.
        ts: u64,
    },
    /// Padding of `len` bytes (discarded event or end of page).
    Padding {
        /// Length of the padding after its header word.
        len: u32,
    },
}

impl<'a> Page<'a> {
    /// Decodes the header of `page` (a whole page, as written by the kernel).
    pub fn new(page: &'a [u8], hp: &HeaderPage) -> Result<Page<'a>> {
        let ts = rd_u64(page, hp.timestamp_offset)
            .ok_or_else(|| Error::corrupt(format!("page of {} bytes has no header", page.len())))?;
        let flags = rd_long(page, hp.commit_offset, hp.commit_size)
            .ok_or_else(|| Error::corrupt(format!("page of {} bytes has no header", page.len())))?;
        let commit = flags & COMMIT_MASK;
        // A data offset past the page leaves no data: an empty slice at the
        // page's end (not a free-standing one), since readers locate the
        // data by its address in the page.
        let area = page.get(hp.data_offset..).unwrap_or(&page[page.len()..]);
        if commit as usize > area.len() {
            return Err(Error::corrupt(format!(
                "page commit {commit} is larger than its data area of {} bytes",
                area.len()
            ))
            .at(hp.commit_offset as u64));
        }
        let data = &area[..commit as usize];
        let missed = if flags & MISSING_EVENTS != 0 {
            if flags & MISSING_STORED != 0 {
                match rd_long(area, commit as usize, hp.commit_size) {
                    Some(n) => Missed::Count(n),
                    None => {
                        return Err(Error::corrupt(format!(
                            "page commit {commit} leaves no room for the stored lost count"
                        ))
                        .at(hp.commit_offset as u64))
                    }
                }
            } else {
                Missed::Unknown
            }
        } else {
            Missed::None
        };
        Ok(Page {
            data,
            timestamp: ts,
            commit,
            missed,
        })
    }

    /// The page's base timestamp.
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// Bytes of event data on the page (commit without flags).
    pub fn commit(&self) -> u64 {
        self.commit
    }

    /// Events lost before this page.
    pub fn missed(&self) -> Missed {
        self.missed
    }

    /// The event data area (`commit` bytes).
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Iterates over every item of the page, including time extends,
    /// time stamps and padding.
    pub fn items(&self) -> PageItems<'a> {
        PageItems {
            data: self.data,
            pos: 0,
            ts: self.timestamp,
            failed: false,
        }
    }

    /// Iterates over the events only: `(ts, payload)`.
    pub fn events(&self) -> impl Iterator<Item = Result<(u64, &'a [u8])>> + 'a {
        self.items().filter_map(|it| match it {
            Ok(PageItem::Event { ts, data, .. }) => Some(Ok((ts, data))),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
    }
}

/// Iterator over the items of a page. After an error it ends.
#[derive(Debug, Clone)]
pub struct PageItems<'a> {
    data: &'a [u8],
    pos: usize,
    ts: u64,
    failed: bool,
}

impl<'a> PageItems<'a> {
    /// Goes on iterating over the page data area `data` at item offset
    /// `pos` with current time `ts` (a [`PageItems::position`] and
    /// [`PageItems::time`] taken earlier from the same bytes): for readers
    /// that cannot keep the borrow between two items.
    pub fn resume(data: &'a [u8], pos: usize, ts: u64) -> PageItems<'a> {
        PageItems {
            data,
            pos,
            ts,
            failed: false,
        }
    }

    /// Offset of the next item in the data area.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Current time (of the last item returned).
    pub fn time(&self) -> u64 {
        self.ts
    }

    #[inline]
    fn fail(&mut self, what: &str, at: usize) -> Option<Result<PageItem<'a>>> {
        self.failed = true;
        Some(Err(Error::corrupt(format!(
            "{what} (page data of {} bytes)",
            self.data.len()
        ))
        .at(at as u64)))
    }
}

impl<'a> Iterator for PageItems<'a> {
    type Item = Result<PageItem<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let at = self.pos;
        let Some(word) = rd_u32(self.data, at) else {
            return self.fail("truncated event header", at);
        };
        let type_len = (word & 0x1f) as u8;
        let delta = u64::from(word >> 5);
        let body = at + 4;
        match type_len {
            TYPE_PADDING => {
                let Some(len) = rd_u32(self.data, body) else {
                    return self.fail("truncated padding", at);
                };
                // A padding with delta 0 ends the page's data.
                self.pos = if delta == 0 {
                    self.data.len()
                } else {
                    body.saturating_add(len as usize)
                };
                self.ts = self.ts.wrapping_add(delta);
                Some(Ok(PageItem::Padding { len }))
            }
            TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                let Some(hi) = rd_u32(self.data, body) else {
                    return self.fail("truncated time extend", at);
                };
                let v = (u64::from(hi) << TS_SHIFT) | delta;
                self.pos = body + 4;
                if type_len == TYPE_TIME_STAMP {
                    self.ts = v | (self.ts & TS_MSB);
                    Some(Ok(PageItem::TimeStamp { ts: self.ts }))
                } else {
                    self.ts = self.ts.wrapping_add(v);
                    Some(Ok(PageItem::TimeExtend { ts: self.ts }))
                }
            }
            0 => {
                let Some(len) = rd_u32(self.data, body) else {
                    return self.fail("truncated event length", at);
                };
                if len < 4 {
                    return self.fail("event length below 4", at);
                }
                let len = ((len as usize - 4) + 3) & !3;
                let start = body + 4;
                let Some(end) = start.checked_add(len).filter(|&e| e <= self.data.len()) else {
                    return self.fail("event runs past the page commit", at);
                };
                self.pos = end;
                self.ts = self.ts.wrapping_add(delta);
                Some(Ok(PageItem::Event {
                    ts: self.ts,
                    offset: start,
                    data: &self.data[start..end],
                }))
            }
            n => {
                let end = body + n as usize * 4;
                if end > self.data.len() {
                    return self.fail("event runs past the page commit", at);
                }
                self.pos = end;
                self.ts = self.ts.wrapping_add(delta);
                Some(Ok(PageItem::Event {
                    ts: self.ts,
                    offset: body,
                    data: &self.data[body..end],
                }))
            }
        }
    }
}

/// Helpers to build pages by hand, for tests in this crate and others.
pub mod build {
    /// `events/header_page` of a 64-bit kernel with 4 KiB pages: the page
    /// layout [`PageBuilder`] writes.
    pub const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    /// The common fields that start every event's `format` (fields
    /// section), with the blank line that follows them.
    pub const COMMON_FIELDS: &str =
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

    /// `events/header_event` of current kernels.
    pub const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\
\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\
\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

    /// Builds a 64-bit-kernel page (u64 timestamp, u64 commit) item by item.
    #[derive(Debug, Clone)]
    pub struct PageBuilder {
        ts: u64,
        flags: u64,
        lost: Option<u64>,
        data: Vec<u8>,
    }

    impl PageBuilder {
        /// A page with base timestamp `ts`.
        pub fn new(ts: u64) -> Self {
            PageBuilder {
                ts,
                flags: 0,
                lost: None,
                data: Vec::new(),
            }
        }

        /// Sets MISSING_EVENTS, and MISSING_STORED with `count` if given.
        pub fn missed(mut self, count: Option<u64>) -> Self {
            self.flags |= super::MISSING_EVENTS;
            if let Some(c) = count {
                self.flags |= super::MISSING_STORED;
                self.lost = Some(c);
            }
            self
        }

        fn word(&mut self, type_len: u32, delta: u32) {
            assert!(delta < (1 << 27));
            self.data
                .extend_from_slice(&((delta << 5) | type_len).to_le_bytes());
        }

        /// Appends an event with `payload` (padded to 4 bytes); uses the
        /// type_len 0 form if `long_form` or the payload is over 112 bytes.
        pub fn event(mut self, delta: u32, payload: &[u8], long_form: bool) -> Self {
            let len = payload.len().div_ceil(4) * 4;
            if !long_form && len <= 28 * 4 && len > 0 {
                self.word((len / 4) as u32, delta);
            } else {
                self.word(0, delta);
                self.data
                    .extend_from_slice(&(payload.len() as u32 + 4).to_le_bytes());
            }
            self.data.extend_from_slice(payload);
            self.data.resize(self.data.len() + (len - payload.len()), 0);
            self
        }

        /// Appends a time extend of `delta` nanoseconds.
        pub fn time_extend(mut self, delta: u64) -> Self {
            self.time_item(30, delta);
            self
        }

        /// Appends an absolute time stamp (low 59 bits of `ts`).
        pub fn time_stamp(mut self, ts: u64) -> Self {
            self.time_item(31, ts);
            self
        }

        /// A time item of `type_len`: the low 27 bits of `t` in its header
        /// word, the next 32 bits in the word after it.
        fn time_item(&mut self, type_len: u32, t: u64) {
            self.word(type_len, (t & ((1 << 27) - 1)) as u32);
            self.data
                .extend_from_slice(&((t >> 27) as u32).to_le_bytes());
        }

        /// Appends a padding of `len` bytes after its two header words.
        pub fn padding(mut self, delta: u32, len: u32) -> Self {
            self.word(29, delta);
            self.data.extend_from_slice(&len.to_le_bytes());
            self.data.resize(self.data.len() + len as usize - 4, 0);
            self
        }

        /// Returns the page, `page_size` bytes long (zero filled), or
        /// `None` if the data does not fit.
        pub fn finish(&self, page_size: usize) -> Option<Vec<u8>> {
            let mut p = Vec::with_capacity(page_size);
            p.extend_from_slice(&self.ts.to_le_bytes());
            p.extend_from_slice(&(self.data.len() as u64 | self.flags).to_le_bytes());
            p.extend_from_slice(&self.data);
            if let Some(l) = self.lost {
                p.extend_from_slice(&l.to_le_bytes());
            }
            if p.len() > page_size {
                return None;
            }
            p.resize(page_size, 0);
            Some(p)
        }

        /// The raw data area built so far.
        pub fn data(&self) -> &[u8] {
            &self.data
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::PageBuilder;
    use super::*;

    const HP: HeaderPage = HeaderPage::DEFAULT_64;

    fn events(p: &[u8]) -> Vec<(u64, Vec<u8>)> {
        Page::new(p, &HP)
            .unwrap()
            .events()
            .map(|r| r.map(|(t, d)| (t, d.to_vec())).unwrap())
            .collect()
    }

    #[test]
    fn data_past_a_short_page_is_empty_at_its_end() {
        // A header page whose data offset lies past the page: the empty
        // data is located in the page (found by the trace_dat fuzzer).
        let hp = HeaderPage {
            data_offset: 64,
            ..HP
        };
        let p = [0u8; 16];
        let page = Page::new(&p, &hp).unwrap();
        assert!(page.data().is_empty());
        assert_eq!(page.data().as_ptr(), p[16..].as_ptr());
        assert_eq!(page.events().count(), 0);
    }

    #[test]
    fn short_and_long_events() {
        let p = PageBuilder::new(1000)
            .event(5, &[1, 2, 3, 4, 5, 6, 7, 8], false)
            .event(7, &[9; 6], true)
            .event(0, &[3; 200], false)
            .finish(4096)
            .unwrap();
        let page = Page::new(&p, &HP).unwrap();
        assert_eq!(page.timestamp(), 1000);
        assert_eq!(page.missed(), Missed::None);
        assert_eq!(page.commit(), 4 + 8 + 8 + 8 + 8 + 200);
        let ev = events(&p);
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[0], (1005, vec![1, 2, 3, 4, 5, 6, 7, 8]));
        // long form: length rounded up to 4 like kbuffer does
        assert_eq!(ev[1], (1012, vec![9, 9, 9, 9, 9, 9, 0, 0]));
        assert_eq!(ev[2], (1012, vec![3; 200]));
    }

    #[test]
    fn time_extend_and_absolute() {
        let big = (3u64 << 27) + 17; // needs the extend's high word
        let abs = 0x0123_4567_89ab_cdef & ((1 << 59) - 1);
        let p = PageBuilder::new(0xf800_0000_0000_0000 | 10)
            .event(1, &[1; 4], false)
            .time_extend(big)
            .event(2, &[2; 4], false)
            .time_stamp(abs)
            .event(3, &[3; 4], false)
            .finish(4096)
            .unwrap();
        let page = Page::new(&p, &HP).unwrap();
        let items: Vec<_> = page.items().map(|r| r.unwrap()).collect();
        let base = 0xf800_0000_0000_0000u64 | 10;
        assert_eq!(items.len(), 5);
        assert_eq!(items[1], PageItem::TimeExtend { ts: base + 1 + big });
        // the absolute stamp keeps the 5 top bits of the running time
        assert_eq!(
            items[3],
            PageItem::TimeStamp {
                ts: abs | 0xf800_0000_0000_0000
            }
        );
        let ev = events(&p);
        assert_eq!(
            ev.iter().map(|e| e.0).collect::<Vec<_>>(),
            [
                base + 1,
                base + 1 + big + 2,
                (abs | 0xf800_0000_0000_0000) + 3
            ]
        );
    }

    #[test]
    fn padding_is_skipped() {
        let p = PageBuilder::new(100)
            .event(1, &[1; 4], false)
            .padding(4, 12)
            .event(2, &[2; 4], false)
            .finish(4096)
            .unwrap();
        let page = Page::new(&p, &HP).unwrap();
        let items: Vec<_> = page.items().map(|r| r.unwrap()).collect();
        assert_eq!(items[1], PageItem::Padding { len: 12 });
        assert_eq!(events(&p), vec![(101, vec![1; 4]), (107, vec![2; 4])]);
        // padding with delta 0 ends the page
        let p = PageBuilder::new(100)
            .event(1, &[1; 4], false)
            .padding(0, 8)
            .event(2, &[2; 4], false)
            .finish(4096)
            .unwrap();
        assert_eq!(events(&p), vec![(101, vec![1; 4])]);
    }

    #[test]
    fn missed_events_flags() {
        let p = PageBuilder::new(1)
            .missed(None)
            .event(1, &[0; 4], false)
            .finish(4096)
            .unwrap();
        assert_eq!(Page::new(&p, &HP).unwrap().missed(), Missed::Unknown);
        let p = PageBuilder::new(1)
            .missed(Some(4242))
            .event(1, &[0; 4], false)
            .finish(4096)
            .unwrap();
        let page = Page::new(&p, &HP).unwrap();
        assert_eq!(page.missed(), Missed::Count(4242));
        assert_eq!(page.commit(), 8);
        assert_eq!(events(&p), vec![(2, vec![0; 4])]);
    }

    #[test]
    fn thirty_two_bit_kernel_layout() {
        // u64 timestamp, u32 commit word, data at 12 (a 32-bit kernel).
        let hp = HeaderPage {
            timestamp_offset: 0,
            commit_offset: 8,
            commit_size: 4,
            data_offset: 12,
            data_size: 4084,
        };
        let data = PageBuilder::new(0).event(3, &[5; 8], false).data().to_vec();
        let mut p = Vec::new();
        p.extend_from_slice(&77u64.to_le_bytes());
        let flags = data.len() as u32 | (1 << 31) | (1 << 30);
        p.extend_from_slice(&flags.to_le_bytes());
        p.extend_from_slice(&data);
        p.extend_from_slice(&9u32.to_le_bytes());
        p.resize(4096, 0);
        let page = Page::new(&p, &hp).unwrap();
        assert_eq!(page.missed(), Missed::Count(9));
        let ev: Vec<_> = page.events().map(|r| r.unwrap()).collect();
        assert_eq!(ev, vec![(80, &[5u8; 8][..])]);
    }

    #[test]
    fn corrupt_pages_error() {
        // truncated header
        assert!(Page::new(&[0u8; 12], &HP).is_err());
        // commit larger than page
        let mut p = PageBuilder::new(1)
            .event(1, &[0; 4], false)
            .finish(4096)
            .unwrap();
        p[8..16].copy_from_slice(&5000u64.to_le_bytes());
        let e = Page::new(&p, &HP).unwrap_err();
        assert_eq!(
            e.to_string(),
            "offset 0x8: corrupt data: page commit 5000 is larger than its data area of 4080 bytes"
        );
        // event running past the commit
        let mut p = PageBuilder::new(1)
            .event(1, &[0; 8], false)
            .finish(4096)
            .unwrap();
        p[8..16].copy_from_slice(&8u64.to_le_bytes());
        let r: Vec<_> = Page::new(&p, &HP).unwrap().events().collect();
        assert_eq!(r.len(), 1);
        assert!(r[0].is_err());
        // long event with length < 4
        let mut p = PageBuilder::new(1)
            .event(1, &[0; 4], true)
            .finish(4096)
            .unwrap();
        p[20..24].copy_from_slice(&2u32.to_le_bytes());
        assert!(Page::new(&p, &HP)
            .unwrap()
            .events()
            .next()
            .unwrap()
            .is_err());
        // truncated page data: MISSING_STORED without room for the count
        let mut p = PageBuilder::new(1)
            .event(1, &[0; 4], false)
            .finish(4096)
            .unwrap();
        p[8..16].copy_from_slice(&(4080u64 | MISSING_EVENTS | MISSING_STORED).to_le_bytes());
        assert!(Page::new(&p, &HP).is_err());
        // a short page slice is fine as long as the commit fits
        let p = PageBuilder::new(1)
            .event(1, &[7; 4], false)
            .finish(4096)
            .unwrap();
        assert_eq!(events(&p[..24]), vec![(2, vec![7; 4])]);
        assert!(Page::new(&p[..20], &HP).is_err());
    }
}
