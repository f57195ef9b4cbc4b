//! Finds the system libtraceevent (1.7 or newer) with pkg-config and links it.

fn main() {
    pkg_config::Config::new()
        .atleast_version("1.7")
        .probe("libtraceevent")
        .expect("libtraceevent not found: apt-get install libtraceevent-dev");
}
