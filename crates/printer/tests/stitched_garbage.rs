//! Garbage in, no panic out: random records (special event ids with short
//! or corrupt payloads, random losses) through the stitcher's index, its
//! views and their event text.

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

#[test]
fn random_records_do_not_panic() {
    let ids = [
        testdata::ID_COOKIE,
        testdata::ID_UNWIND_STACK,
        testdata::ID_USER_STACK,
        testdata::ID_KERNEL_STACK,
        testdata::ID_SYS_ENTER,
        testdata::ID_SCHED_SWITCH,
        999,
    ];
    let mut rng = testdata::Rng(0x1234_5678_9abc_def1);
    for round in 0..200 {
        let mut payloads = Vec::new();
        for _ in 0..50 {
            let len = (rng.next_u64() % 120) as usize;
            let mut d: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if len >= 8 {
                let id = ids[(rng.next_u64() % ids.len() as u64) as usize];
                d[0..2].copy_from_slice(&id.to_le_bytes());
                // Few pids, so that groups form.
                d[4..8].copy_from_slice(&((rng.next_u64() % 3) as i32).to_le_bytes());
            }
            payloads.push(d);
        }
        let mut items = Vec::new();
        for (i, d) in payloads.iter().enumerate() {
            let cpu = (rng.next_u64() % 3) as u32;
            if rng.next_u64() % 10 == 0 {
                items.push(Ok::<_, String>(Item::Lost {
                    cpu,
                    ts: i as u64,
                    count: (rng.next_u64() % 2 == 0).then_some(rng.next_u64() % 100),
                }));
            }
            items.push(Ok(Item::Event(Record::new(cpu, i as u64, d))));
        }
        if round % 7 == 0 {
            items.push(Err("injected read error".to_string()));
        }
        let idx = Index::build(formats(), Comms::default(), &Locator::default(), items);
        assert_eq!(idx.events.len(), 50);
        let mut sym = Symbolizer::new(
            Some(testdata::KALLSYMS.to_string()),
            AddressSpaces::new(ProcMap::parse_all(
                "zz 1 x\n1 2 /nonexistent\nffffffffffffffff 1 /x\n",
            )),
        );
        for g in &idx.stitched.groups {
            let d = ustack_stitch::view::detail(
                &idx,
                g,
                |s| Some(Record::new(0, 0, &payloads[s as usize])),
                &mut ustack_printer::text::Texts::generic(),
                &mut sym,
            );
            let _ = format!("{d:?}");
        }
        for s in 0..50u64 {
            let r = Record::new(0, 0, &payloads[s as usize]);
            let _ = ustack_printer::text::event_text(&idx, s, Some(&r));
        }
    }
}
