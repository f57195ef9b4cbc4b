//! Writes the small fixed test trace of `ustack_testdata::fixture`:
//! `cargo run -p stitch --example gen_fixture -- OUT`.

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fixture.dat".into());
    if let Err(e) = ustack_testdata::fixture().write(std::path::Path::new(&out)) {
        eprintln!("gen_fixture: {e}");
        std::process::exit(1);
    }
}
