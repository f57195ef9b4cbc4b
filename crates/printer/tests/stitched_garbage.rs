//! Garbage in, no panic out: random records (special event ids with short
//! or corrupt payloads, random losses, a read error) through the
//! stitcher's index, its views and their event text. proptest shrinks a
//! failing trace to a small one.

use proptest::prelude::*;
use ustack_stitch::trace::{Comms, Index, Locator};
use ustack_symbolize::{AddressSpaces, Symbolizer};
use ustack_testdata as testdata;
use ustack_tracedata::reader::Item;
use ustack_tracedata::ProcMap;
use ustack_tracedata::{EventFormat, Record};

fn formats() -> Vec<EventFormat> {
    let mut v = Vec::new();
    for t in testdata::ftrace_formats() {
        v.push(EventFormat::parse("ftrace", std::str::from_utf8(&t).unwrap()).unwrap());
    }
    for s in testdata::event_systems() {
        for t in s.formats {
            v.push(EventFormat::parse(&s.name, std::str::from_utf8(&t).unwrap()).unwrap());
        }
    }
    v
}

/// The ids the stitcher treats specially, and one no format has.
const IDS: [u16; 7] = [
    testdata::ID_COOKIE,
    testdata::ID_UNWIND_STACK,
    testdata::ID_USER_STACK,
    testdata::ID_KERNEL_STACK,
    testdata::ID_SYS_ENTER,
    testdata::ID_SCHED_SWITCH,
    999,
];

/// One record: its CPU, a loss before it (with or without a count), and a
/// payload whose header, when it has one, names a special id and one of
/// few pids (so that groups form).
#[derive(Debug, Clone)]
struct RandomRecord {
    cpu: u32,
    lost_before: Option<Option<u64>>,
    payload: Vec<u8>,
}

fn record() -> impl Strategy<Value = RandomRecord> {
    (
        0..3u32,
        proptest::option::weighted(0.1, proptest::option::of(0..100u64)),
        proptest::collection::vec(any::<u8>(), 0..120),
        proptest::sample::select(&IDS[..]),
        0..3i32,
    )
        .prop_map(|(cpu, lost_before, mut payload, id, pid)| {
            if payload.len() >= 8 {
                payload[0..2].copy_from_slice(&id.to_le_bytes());
                payload[4..8].copy_from_slice(&pid.to_le_bytes());
            }
            RandomRecord {
                cpu,
                lost_before,
                payload,
            }
        })
}

fn stitch_and_show(records: &[RandomRecord], read_error: bool) {
    let mut items = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if let Some(count) = r.lost_before {
            items.push(Ok::<_, String>(Item::Lost {
                cpu: r.cpu,
                ts: i as u64,
                count,
            }));
        }
        items.push(Ok(Item::Event(Record::new(r.cpu, i as u64, &r.payload))));
    }
    if read_error {
        items.push(Err("injected read error".to_string()));
    }
    let idx = Index::build(formats(), Comms::default(), &Locator::default(), items);
    assert_eq!(idx.events.len(), records.len());
    let mut sym = Symbolizer::new(
        Some(testdata::KALLSYMS.to_string()),
        AddressSpaces::new(ProcMap::parse_all(
            "zz 1 x\n1 2 /nonexistent\nffffffffffffffff 1 /x\n",
        )),
    );
    let payload = |s: u64| &records[s as usize].payload;
    for g in idx.stitched.groups.iter() {
        let d = ustack_stitch::view::detail(
            &idx,
            &g,
            |s| Some(Record::new(0, 0, payload(s))),
            &mut ustack_printer::text::Texts::generic(),
            &mut sym,
        );
        let _ = format!("{d:?}");
    }
    for s in 0..records.len() as u64 {
        let r = Record::new(0, 0, payload(s));
        let _ = ustack_printer::text::event_text(&idx, s, Some(&r));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_records_do_not_panic(
        records in proptest::collection::vec(record(), 50),
        read_error in proptest::bool::weighted(0.15),
    ) {
        stitch_and_show(&records, read_error);
    }
}
