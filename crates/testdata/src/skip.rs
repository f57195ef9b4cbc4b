//! Tests that need something this machine may lack (trace-cmd, tmux, a
//! libc with symbols): without it they skip and say why, except in CI
//! (`CI=true`), which must run every test, so there they fail instead.

/// Whether this is a CI run (`CI=true`), where no test may skip.
pub fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Skips the calling test because of `why` (what is missing, as "needs
/// trace-cmd"): prints a `SKIP` line naming the test and the reason; the
/// caller returns right after. Under `CI=true` this panics instead, so the
/// test fails rather than passing without having checked anything.
///
/// ```no_run
/// fn have_tmux() -> bool { false }
/// if !have_tmux() {
///     return ustack_testdata::skip_unless_ci("needs tmux");
/// }
/// ```
#[track_caller]
pub fn skip_unless_ci(why: &str) {
    let at = std::panic::Location::caller();
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("this test");
    if in_ci() {
        // The panic message gives the place already.
        panic!("{test} cannot run: {why}; CI=true makes that a failure, not a skip");
    }
    eprintln!("SKIP: {test} ({at}) did not run: {why} (under CI=true this fails)");
}
