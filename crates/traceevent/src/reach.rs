//! How far past the start of a record libtraceevent reads.
//!
//! libtraceevent reads each field at the offset and size its format
//! declares, not within the record's size: a fixed array of a record that
//! the kernel stored shorter than its format (a `kernel_stack` with fewer
//! than 8 callers: the ring buffer keeps only the callers it has) is read
//! whole, and a `__data_loc`/`__rel_loc` field is followed to wherever its
//! locator points. [`Reaches`] keeps, per event id, what its format makes
//! libtraceevent read, so that a [`crate::Record`] can make sure those
//! bytes exist before the library sees it.

use std::collections::HashMap;

use ustack_tracedata::{EventFormat, FieldKind};

/// What libtraceevent reads of the records of one event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Reach {
    /// The end of the last field (offset + size).
    fixed_end: usize,
    /// The dynamic fields: (offset of the 4-byte locator, what its offset
    /// is relative to: 0 for `__data_loc`, the field's end for
    /// `__rel_loc`).
    dynamic: Vec<(usize, usize)>,
}

/// The reaches of the events a handle knows, and of the common fields
/// every record is read for (its type, pid and flags are read before the
/// event is known).
#[derive(Debug, Default)]
pub(crate) struct Reaches {
    events: HashMap<u16, Reach>,
    common_end: usize,
}

impl Reaches {
    /// Notes the fields of a format handed to libtraceevent.
    pub(crate) fn add(&mut self, f: &EventFormat) {
        let mut r = Reach::default();
        for field in &f.fields {
            let end = field.offset.saturating_add(field.size);
            r.fixed_end = r.fixed_end.max(end);
            if field.name.starts_with("common_") {
                self.common_end = self.common_end.max(end);
            }
            match field.kind {
                FieldKind::DataLoc => r.dynamic.push((field.offset, 0)),
                FieldKind::RelLoc => r.dynamic.push((field.offset, end)),
                FieldKind::Scalar | FieldKind::Array { .. } => {}
            }
        }
        self.events.insert(f.id, r);
    }

    /// How many bytes from the start of a record libtraceevent may read,
    /// given the record's bytes as far as they are known (`data`: at
    /// least the fixed fields of its event, zeros where the record ended;
    /// see [`Reaches::fixed`]).
    pub(crate) fn dynamic(&self, data: &[u8]) -> usize {
        let Some(r) = self.event_of(data) else {
            return self.common_end;
        };
        let mut need = r.fixed_end.max(self.common_end);
        for &(at, base) in &r.dynamic {
            let Some(w) = data.get(at..at + 4) else {
                continue;
            };
            let loc = u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize;
            need = need.max(base + (loc & 0xffff) + (loc >> 16));
        }
        need
    }

    /// The bytes of the common and fixed fields of the event of the record
    /// that starts with `data`.
    pub(crate) fn fixed(&self, data: &[u8]) -> usize {
        self.event_of(data)
            .map_or(0, |r| r.fixed_end)
            .max(self.common_end)
    }

    fn event_of(&self, data: &[u8]) -> Option<&Reach> {
        let id = u16::from_le_bytes([*data.first()?, *data.get(1)?]);
        self.events.get(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT: &str = "name: ev
ID: 42
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long caller[8];\toffset:8;\tsize:64;\tsigned:0;
\tfield:__data_loc char[] name;\toffset:72;\tsize:4;\tsigned:0;
\tfield:__rel_loc char[] rel;\toffset:76;\tsize:4;\tsigned:0;

print fmt: \"%s\", __get_str(name)
";

    #[test]
    fn fixed_arrays_and_locators_set_the_reach() {
        let mut r = Reaches::default();
        r.add(&EventFormat::parse("sys", FORMAT).unwrap());
        let mut rec = vec![0u8; 80];
        rec[0] = 42;
        assert_eq!(r.fixed(&rec), 80);
        // name: 10 bytes at 100; rel: 6 bytes at 30 past its end (80).
        rec[72..76].copy_from_slice(&(100u32 | 10 << 16).to_le_bytes());
        assert_eq!(r.dynamic(&rec), 110);
        rec[76..80].copy_from_slice(&(30u32 | 6 << 16).to_le_bytes());
        assert_eq!(r.dynamic(&rec), 116);
        // An unknown event: only the common fields are read.
        rec[0] = 43;
        assert_eq!((r.fixed(&rec), r.dynamic(&rec)), (8, 8));
        assert_eq!(r.fixed(&[42]), 8);
    }
}
