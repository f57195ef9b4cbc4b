//! Large files: the first screen over the first events, the rest indexed
//! by a background [`ustack_tui::loader::Loader`]; searches that go on in
//! slices between keys.

mod common;

use common::*;
use ustack_printer::select::Selection;
use ustack_stitch::Status;
use ustack_tui::app::{Msg, Prompt};
use ustack_tui::loader::FIRST_EVENTS;
use ustack_tui::source::FileSource;

/// Demo groups: about 7 records each, so well over [`FIRST_EVENTS`].
const GROUPS: usize = 30_000;

#[test]
fn the_first_screen_shows_the_beginning_and_the_loader_the_whole() {
    let f = fixture(Some(GROUPS));
    let (full, _) = ustack_tui::open(&f.path, None, (120, 40)).unwrap();
    assert!(full.idx.events.len() > 2 * FIRST_EVENTS);

    let select = Selection::default();
    let (mut first, mut src, loader) =
        ustack_tui::open_first(&f.path, None, (120, 40), &select).unwrap();
    let loader = loader.expect("a file larger than the first screen's share");
    // Exactly the first records in time order: the same events, seq by seq.
    let n = first.idx.events.len();
    assert_eq!(n + first.idx.losses.len(), FIRST_EVENTS);
    assert_eq!(first.idx.events[..], full.idx.events[..n]);
    // A group complete in the beginning is the same group in the whole:
    // its stack came, so no later record changes it.
    let key = |g: &ustack_stitch::Group| (g.pid, g.cookie, g.first_ts);
    let whole: std::collections::HashMap<_, _> = full
        .idx
        .stitched
        .groups
        .iter()
        .map(|g| (key(&g), g))
        .collect();
    let complete: Vec<_> = first
        .idx
        .stitched
        .groups
        .iter()
        .filter(|g| g.status == Status::Complete)
        .collect();
    assert!(complete.len() > 1000, "{} complete groups", complete.len());
    for g in complete {
        let w = whole
            .get(&key(&g))
            .expect("the group is in the whole index");
        assert_eq!(
            (&g.events, g.user_stack, g.status),
            (&w.events, w.user_stack, w.status)
        );
    }

    // The status line says what is shown while the rest is indexed.
    first.loading = Some(loader.status());
    first.refresh(&mut src);
    draw(&mut first, &mut src);
    let status = screen(&first).last().cloned().unwrap_or_default();
    assert!(
        status.starts_with("indexing ") && status.contains("showing the first 100000 events"),
        "{status:?}"
    );

    // The user moved on the first screen; the whole index keeps the place.
    send(&mut first, &mut src, &[Msg::Down(7)]);
    let chosen = key(&first
        .idx
        .stitched
        .groups
        .get(first.selected_group().unwrap()));
    let loaded = loader.wait().unwrap();
    let mut next = loaded.app;
    next.carry_over(&first);
    assert_eq!(next.idx.events.len(), full.idx.events.len());
    assert_eq!(
        next.idx.stitched.groups.len(),
        full.idx.stitched.groups.len()
    );
    let now = key(&next.idx.stitched.groups.get(next.selected_group().unwrap()));
    assert_eq!((now, next.groups_at.sel), (chosen, 7));
}

#[test]
fn a_small_file_is_indexed_whole_at_once() {
    let f = fixture(Some(100));
    let (app, _, loader) =
        ustack_tui::open_first(&f.path, None, (120, 40), &Selection::default()).unwrap();
    assert!(loader.is_none());
    let (full, _) = ustack_tui::open(&f.path, None, (120, 40)).unwrap();
    assert_eq!(app.idx.events, full.idx.events);
}

#[test]
fn a_state_built_again_keeps_the_expanded_call_tree() {
    let f = fixture(Some(300));
    let (mut old, mut src) = open(&f, (120, 40));
    send(
        &mut old,
        &mut src,
        &[Msg::ShowTab(ustack_tui::app::Tab::Tree)],
    );
    let collapsed = old.tree.as_ref().unwrap().rows.len();
    send(&mut old, &mut src, &[Msg::ExpandAll]);
    let rows = old.tree.as_ref().unwrap().rows.clone();
    assert!(rows.len() > collapsed, "{} rows", rows.len());

    let (mut next, mut src) = ustack_tui::open(&f.path, None, (120, 40)).unwrap();
    next.carry_over(&old);
    next.refresh(&mut src);
    assert_eq!(next.tree.as_ref().unwrap().rows, rows);
    // Once more, from a state whose tree was never built.
    let (mut again, mut src) = ustack_tui::open(&f.path, None, (120, 40)).unwrap();
    let mut unbuilt = ustack_tui::open(&f.path, None, (120, 40)).unwrap().0;
    unbuilt.carry_over(&next);
    again.carry_over(&unbuilt);
    again.refresh(&mut src);
    assert_eq!(again.tree.as_ref().unwrap().rows, rows);
}

#[test]
fn the_whole_index_of_a_file_cut_short_says_so_after_the_swap() {
    let f = fixture(Some(GROUPS));
    // A page near the end of CPU 0's data overwritten: the first events
    // read fine, the end does not.
    let mut bytes = std::fs::read(&f.path).unwrap();
    let (at, size) = {
        let t = ustack_tracedata::TraceFile::open(&f.path).unwrap();
        let c = &t.buffers()[0].cpus[0];
        (c.file_offset as usize, c.file_size as usize)
    };
    let page = at + (size * 9 / 10) / 4096 * 4096;
    bytes[page..page + 64].fill(0xff);
    let cut = f.path.with_extension("cut.dat");
    std::fs::write(&cut, &bytes).unwrap();
    let (mut first, mut src, loader) =
        ustack_tui::open_first(&cut, None, (120, 40), &Selection::default()).unwrap();
    assert_eq!(first.idx.error, None);
    first.message = "an old message".into();
    first.refresh(&mut src);
    let mut next = loader
        .expect("more than the first screen")
        .wait()
        .unwrap()
        .app;
    assert!(next.idx.error.is_some());
    next.carry_over(&first);
    assert!(
        next.message.starts_with("trace data cut short: "),
        "{:?}",
        next.message
    );
}

/// The groups tab with a search for the cookie of the group `k` rows
/// down, sliced as finely as it goes.
fn sliced_search(f: &Fixture, k: usize) -> (ustack_tui::app::App, FileSource, usize) {
    let (mut app, mut src) = open(f, (120, 40));
    app.search_slice = std::time::Duration::ZERO;
    let g = app.groups[k] as usize;
    let pat = format!("{:x}", app.idx.stitched.groups.get(g).cookie.unwrap());
    // The first row that matches, as a plain scan finds it.
    let first = (1..app.groups.len())
        .find(|&r| {
            let c = app.idx.stitched.groups.get(app.groups[r] as usize).cookie;
            c.is_some_and(|c| format!("{c:x}").contains(&pat))
        })
        .unwrap();
    send(&mut app, &mut src, &type_in(Prompt::Search, &pat));
    (app, src, first)
}

#[test]
fn a_search_over_many_rows_goes_on_in_slices_and_finds_the_first_match() {
    let f = fixture(Some(GROUPS));
    let far = 25_000;
    let (mut app, mut src, first) = sliced_search(&f, far);
    assert!(first > 4096 * 2, "row {first}");
    // One slice looked at 4,096 rows: the search is under way.
    assert!(app.searching.is_some());
    assert!(
        app.message.starts_with("searching /") && app.message.ends_with("% (any key stops)"),
        "{}",
        app.message
    );
    // Slices of 4,096 rows each, the last one with the match.
    let mut slices = 1;
    loop {
        slices += 1;
        if !app.search_more(&mut src) {
            break;
        }
    }
    assert_eq!(slices, first.div_ceil(4096));
    assert_eq!(app.groups_at.sel, first);
    assert_eq!(
        app.message,
        format!("/{}: row {}", app.search.clone().unwrap(), first + 1)
    );
}

#[test]
fn any_key_stops_a_search_and_esc_does_nothing_else() {
    let f = fixture(Some(GROUPS));
    let (mut app, mut src, _) = sliced_search(&f, 25_000);
    assert!(app.searching.is_some());
    send(&mut app, &mut src, &[Msg::Back]);
    assert_eq!((app.searching.is_some(), app.groups_at.sel), (false, 0));
    assert_eq!(app.message, "search stopped");
    // Another key stops it and does what it does.
    send(&mut app, &mut src, &[Msg::SearchNext]);
    assert!(app.searching.is_some());
    send(&mut app, &mut src, &[Msg::Down(2)]);
    assert_eq!((app.searching.is_some(), app.groups_at.sel), (false, 2));
}
