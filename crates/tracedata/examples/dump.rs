//! Prints the metadata and events of a trace.dat file (debugging aid).
//!
//! Usage: `cargo run -p tracedata --example dump -- FILE [--events]`

use ustack_tracedata::{Item, TraceFile};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "trace.dat".into());
    let events = args.next().as_deref() == Some("--events");
    let f = match TraceFile::open(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("dump: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "version {} page_size {} long {} kernel long {} cpus {} compression {:?}",
        f.version(),
        f.page_size(),
        f.long_size(),
        f.kernel_long_size(),
        f.cpu_count(),
        f.compression()
    );
    println!("clock {:?} uname {:?}", f.clock(), f.uname());
    println!(
        "formats {} kallsyms {} printk {} cmdlines {}",
        f.formats().len(),
        f.kallsyms().map_or(0, |k| k.len()),
        f.printk_formats().len(),
        f.cmdlines().len()
    );
    for b in f.buffer_stats() {
        for c in &b.cpus {
            println!(
                "stats {:?} cpu {} overrun {:?} dropped {:?}",
                b.name, c.cpu, c.overrun, c.dropped_events
            );
        }
    }
    for o in f.options() {
        println!("option {} ({} bytes)", o.id, o.data.len());
    }
    for b in f.buffers() {
        println!(
            "buffer {:?} clock {:?} page {}",
            b.name, b.clock, b.page_size
        );
        for c in &b.cpus {
            println!(
                "  cpu {} off {:#x} size {} data {}",
                c.cpu,
                c.file_offset,
                c.file_size,
                c.data_size()
            );
        }
        let (mut n, mut lost) = (0u64, 0u64);
        for it in f.records(b) {
            match it {
                Ok(Item::Event(r)) => {
                    n += 1;
                    if events {
                        let name = f.formats().of(&r).map(|f| f.name.as_str()).unwrap_or("?");
                        println!(
                            "  [{:03}] {} {} pid {:?}",
                            r.cpu,
                            r.ts,
                            name,
                            r.common_pid()
                        );
                    }
                }
                Ok(Item::Lost { cpu, ts, count }) => {
                    lost += 1;
                    println!("  lost cpu {cpu} ts {ts} count {count:?}");
                }
                Err(e) => println!("  error: {e}"),
            }
        }
        println!("  events {n} lost markers {lost}");
    }
}
