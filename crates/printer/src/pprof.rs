//! The stitched stacks of `report --pprof FILE` as a pprof profile
//! (`profile.proto`, gzip-compressed), for `go tool pprof`, speedscope and
//! continuous-profiling servers (Pyroscope, Parca).
//!
//! Each kernel event of a group is one count of the sample type
//! `events/count`. Its stack holds the same frames as a `--folded` line,
//! leaf first as pprof wants: the event name, the kernel frames (innermost
//! first), the user frames (innermost first, or `[status]` when the group
//! has no user stack) and the command name as the root. Samples with the
//! same stack are merged; each also carries `comm` and `event` labels.
//!
//! The wire format is `prost`'s: the messages of `profile.proto` that a
//! profile needs are declared in `proto` with their field numbers, and
//! fields left out there are absent (their default) in every profile.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use flate2::write::GzEncoder;
use prost::Message;
use ustack_stitch::view::GroupDetail;
use ustack_symbolize::Frame;

use crate::frame::{format_frame, FrameStyle};

/// The messages of pprof's `profile.proto` (package `perftools.profiles`)
/// that a profile of stitched stacks uses, with the field numbers of that
/// file. Strings are indices into `Profile::string_table`; ids are 1-based.
mod proto {
    /// The whole profile (`Profile`).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        /// What each value of a sample counts (one type: `events/count`).
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        /// The samples: a stack and its count.
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        /// The locations (frames) that samples refer to by id.
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        /// The functions that locations refer to by id.
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        /// Every string of the profile; the first must be "".
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        /// Time from the first to the last event, in nanoseconds.
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        /// What `period` is measured in.
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        /// The sampling period: every event counts once.
        #[prost(int64, tag = "12")]
        pub period: i64,
    }

    /// A type and unit of values (`ValueType`), as string indices.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        /// The type ("events").
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        /// The unit ("count").
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// One stack and its values (`Sample`).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Location ids, leaf first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        /// One value per sample type.
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        /// The sample's labels.
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// A string label of a sample (`Label`): key and value are string indices.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        /// The label's name.
        #[prost(int64, tag = "1")]
        pub key: i64,
        /// The label's string value.
        #[prost(int64, tag = "2")]
        pub str: i64,
    }

    /// A frame (`Location`): an address and the function it lies in.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        /// The location's id, referred to by `Sample::location_id`.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// The instruction address (0 for pseudo-frames).
        #[prost(uint64, tag = "3")]
        pub address: u64,
        /// The function at the address (one, no inlined ones).
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    /// A function at a location (`Line`).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        /// The id of the `Function` at this location.
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
    }

    /// A function (`Function`): name and file as string indices.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        /// The function's id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// The name shown.
        #[prost(int64, tag = "2")]
        pub name: i64,
        /// The name as the system knows it (the same).
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        /// The object file, or `[kernel]`, `[user]` or "".
        #[prost(int64, tag = "4")]
        pub filename: i64,
    }
}

/// One stack frame as pprof sees it: a function (name, file) at an address
/// (0 for the event, status and comm pseudo-frames).
#[derive(Clone, PartialEq, Eq, Hash)]
struct FrameKey {
    name: String,
    file: String,
    addr: u64,
}

impl FrameKey {
    fn pseudo(name: String) -> FrameKey {
        FrameKey {
            name,
            file: String::new(),
            addr: 0,
        }
    }

    fn real(f: &Frame, default_file: &str) -> FrameKey {
        FrameKey {
            name: format_frame(f, FrameStyle::Folded),
            file: f.object.clone().unwrap_or_else(|| default_file.to_string()),
            addr: f.addr,
        }
    }
}

/// A profile being built: string table, functions, locations, samples.
#[derive(Default)]
struct Profile {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    /// (name, file) string ids -> function id.
    functions: HashMap<(i64, i64), u64>,
    /// Frame -> location id (ids start at 1).
    locations: HashMap<FrameKey, u64>,
    location_list: Vec<(u64, u64)>,
    /// (location ids leaf first, comm, event) -> count.
    samples: BTreeMap<(Vec<u64>, String, String), u64>,
    first_ts: Option<u64>,
    last_ts: u64,
}

impl Profile {
    fn new() -> Profile {
        let mut p = Profile::default();
        p.string(""); // string_table[0] must be "".
        p
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    fn location(&mut self, key: FrameKey) -> u64 {
        if let Some(&id) = self.locations.get(&key) {
            return id;
        }
        let name = self.string(&key.name);
        let file = self.string(&key.file);
        let next = self.functions.len() as u64 + 1;
        let func = *self.functions.entry((name, file)).or_insert(next);
        let id = self.location_list.len() as u64 + 1;
        self.location_list.push((key.addr, func));
        self.locations.insert(key, id);
        id
    }

    fn add_group(&mut self, d: &GroupDetail) {
        self.first_ts = Some(self.first_ts.map_or(d.first_ts, |t| t.min(d.first_ts)));
        self.last_ts = self.last_ts.max(d.last_ts);
        let comm = d.comm.replace(';', "_");
        let user: Vec<FrameKey> = if d.user.is_some() {
            d.user_frames
                .iter()
                .map(|f| FrameKey::real(f, "[user]"))
                .collect()
        } else {
            vec![FrameKey::pseudo(format!("[{}]", d.status.name()))]
        };
        for e in &d.events {
            let mut stack = vec![FrameKey::pseudo(e.name.clone())];
            stack.extend(e.kernel.iter().map(|f| FrameKey::real(f, "[kernel]")));
            stack.extend(user.iter().cloned());
            stack.push(FrameKey::pseudo(comm.clone()));
            let ids = stack.into_iter().map(|k| self.location(k)).collect();
            *self
                .samples
                .entry((ids, comm.clone(), e.name.clone()))
                .or_default() += 1;
        }
    }

    /// The profile's message. Counts and times are `u64`s sent as the
    /// `int64`s of profile.proto: `as` keeps their bits, and so their
    /// varints.
    fn encode(mut self) -> Vec<u8> {
        let value_type = proto::ValueType {
            r#type: self.string("events"),
            unit: self.string("count"),
        };
        let (comm_key, event_key) = (self.string("comm"), self.string("event"));
        let samples = std::mem::take(&mut self.samples);
        let sample = samples
            .into_iter()
            .map(|((ids, comm, event), n)| proto::Sample {
                location_id: ids,
                value: vec![n as i64],
                label: vec![
                    proto::Label {
                        key: comm_key,
                        str: self.string(&comm),
                    },
                    proto::Label {
                        key: event_key,
                        str: self.string(&event),
                    },
                ],
            })
            .collect();
        let location = (1..)
            .zip(&self.location_list)
            .map(|(id, &(address, function_id))| proto::Location {
                id,
                address,
                line: vec![proto::Line { function_id }],
            })
            .collect();
        let mut function: Vec<_> = self
            .functions
            .iter()
            .map(|(&(name, filename), &id)| proto::Function {
                id,
                name,
                system_name: name,
                filename,
            })
            .collect();
        function.sort_unstable_by_key(|f| f.id);
        let first = self.first_ts.unwrap_or(0);
        proto::Profile {
            sample_type: vec![value_type.clone()],
            sample,
            location,
            function,
            string_table: self.strings,
            duration_nanos: self.last_ts.saturating_sub(first) as i64,
            period_type: Some(value_type),
            period: 1,
        }
        .encode_to_vec()
    }
}

/// Writes the groups as a gzip-compressed pprof profile.
pub fn write(
    details: impl Iterator<Item = GroupDetail>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut p = Profile::new();
    for d in details {
        p.add_group(&d);
    }
    let mut gz = GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&p.encode())?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::proto::*;
    use prost::Message;

    /// The field numbers are profile.proto's: the bytes are the ones the
    /// hand-written encoder before prost wrote (and pprof reads).
    #[test]
    fn messages_have_the_field_numbers_of_profile_proto() {
        let sample = Sample {
            location_id: vec![3, 270],
            value: vec![1],
            label: vec![Label { key: 1, str: 2 }],
        };
        assert_eq!(
            sample.encode_to_vec(),
            [0x0a, 3, 3, 0x8e, 0x02, 0x12, 1, 1, 0x1a, 4, 0x08, 1, 0x10, 2]
        );
        let vt = ValueType { r#type: 1, unit: 2 };
        let profile = Profile {
            sample_type: vec![vt.clone()],
            sample: vec![],
            location: vec![Location {
                id: 1,
                address: 0x10,
                line: vec![Line { function_id: 2 }],
            }],
            function: vec![Function {
                id: 2,
                name: 1,
                system_name: 1,
                filename: 3,
            }],
            string_table: vec![String::new(), "ab".to_string()],
            duration_nanos: 150,
            period_type: Some(vt),
            period: 1,
        };
        #[rustfmt::skip]
        let want = [
            0x0a, 4, 0x08, 1, 0x10, 2, // sample_type
            0x22, 8, 0x08, 1, 0x18, 0x10, 0x22, 2, 0x08, 2, // location
            0x2a, 8, 0x08, 2, 0x10, 1, 0x18, 1, 0x20, 3, // function
            0x32, 0, 0x32, 2, b'a', b'b', // string_table
            0x50, 0x96, 0x01, // duration_nanos
            0x5a, 4, 0x08, 1, 0x10, 2, // period_type
            0x60, 1, // period
        ];
        assert_eq!(profile.encode_to_vec(), want);
        assert_eq!(Profile::decode(&want[..]).unwrap(), profile);
    }
}
