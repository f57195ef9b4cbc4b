//! Writes a synthetic demo trace.dat (no root needed):
//! `cargo run -p stitch --example gen_trace -- OUT [GROUPS] [CPUS]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args.next().unwrap_or_else(|| "demo.dat".into());
    let groups = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let cpus = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    if let Err(e) = ustack_testdata::demo(groups, cpus).write(std::path::Path::new(&out)) {
        eprintln!("gen_trace: {e}");
        std::process::exit(1);
    }
}
