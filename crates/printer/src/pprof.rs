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
//! The encoder is written by hand: a profile needs five message types and
//! the protobuf wire format's varints and length-delimited fields only.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use flate2::write::GzEncoder;
use ustack_stitch::view::GroupDetail;
use ustack_symbolize::Frame;

use crate::frame::{format_frame, FrameStyle};

/// Protobuf wire format writer (varints and length-delimited fields).
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    /// A varint field (wire type 0); zero values are left out, as proto3 does.
    fn uint(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.varint(u64::from(field) << 3);
            self.varint(v);
        }
    }

    /// A length-delimited field (wire type 2): bytes, string or message.
    fn bytes(&mut self, field: u32, data: &[u8]) {
        self.varint(u64::from(field) << 3 | 2);
        self.varint(data.len() as u64);
        self.0.extend_from_slice(data);
    }

    /// A packed repeated varint field.
    fn packed(&mut self, field: u32, values: &[u64]) {
        let mut p = Pb::default();
        for &v in values {
            p.varint(v);
        }
        self.bytes(field, &p.0);
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
    string_ids: HashMap<String, u64>,
    /// (name, file) string ids -> function id.
    functions: HashMap<(u64, u64), u64>,
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

    fn string(&mut self, s: &str) -> u64 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as u64;
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

    fn encode(mut self) -> Vec<u8> {
        let events = self.string("events");
        let count = self.string("count");
        let (comm_key, event_key) = (self.string("comm"), self.string("event"));
        let samples = std::mem::take(&mut self.samples);
        let mut pb = Pb::default();
        let mut vt = Pb::default();
        vt.uint(1, events);
        vt.uint(2, count);
        pb.bytes(1, &vt.0);
        for ((ids, comm, event), n) in &samples {
            let (comm, event) = (self.string(comm), self.string(event));
            let mut s = Pb::default();
            s.packed(1, ids);
            s.packed(2, &[*n]);
            for (k, v) in [(comm_key, comm), (event_key, event)] {
                let mut l = Pb::default();
                l.uint(1, k);
                l.uint(2, v);
                s.bytes(3, &l.0);
            }
            pb.bytes(2, &s.0);
        }
        for (i, (addr, func)) in self.location_list.iter().enumerate() {
            let mut line = Pb::default();
            line.uint(1, *func);
            let mut l = Pb::default();
            l.uint(1, i as u64 + 1);
            l.uint(3, *addr);
            l.bytes(4, &line.0);
            pb.bytes(4, &l.0);
        }
        let mut funcs: Vec<_> = self.functions.iter().map(|(k, v)| (*v, *k)).collect();
        funcs.sort_unstable();
        for (id, (name, file)) in funcs {
            let mut f = Pb::default();
            f.uint(1, id);
            f.uint(2, name);
            f.uint(3, name);
            f.uint(4, file);
            pb.bytes(5, &f.0);
        }
        for s in &self.strings {
            pb.bytes(6, s.as_bytes());
        }
        let first = self.first_ts.unwrap_or(0);
        pb.uint(10, self.last_ts.saturating_sub(first));
        pb.bytes(11, &vt.0);
        pb.uint(12, 1);
        pb.0
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
    use super::Pb;

    #[test]
    fn varints_and_fields_follow_the_wire_format() {
        let mut p = Pb::default();
        p.varint(300);
        assert_eq!(p.0, [0xac, 0x02]);
        let mut p = Pb::default();
        p.uint(1, 150);
        p.uint(2, 0);
        p.bytes(6, b"ab");
        p.packed(1, &[3, 270]);
        assert_eq!(
            p.0,
            [0x08, 0x96, 0x01, 0x32, 2, b'a', b'b', 0x0a, 3, 3, 0x8e, 0x02]
        );
    }
}
