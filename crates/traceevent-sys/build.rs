//! Finds the system libtraceevent (1.7 or newer) with pkg-config and links
//! it, and compiles src/layout.c, which records the C layouts of the
//! structs the Rust declarations spell out (checked by the `layout` test).

fn main() {
    let lib = pkg_config::Config::new()
        .atleast_version("1.7")
        .probe("libtraceevent")
        .expect("libtraceevent not found: apt-get install libtraceevent-dev");
    let mut build = cc::Build::new();
    build.file("src/layout.c");
    for dir in &lib.include_paths {
        build.include(dir);
    }
    build.compile("ustack_tep_layout");
    println!("cargo:rerun-if-changed=src/layout.c");
}
