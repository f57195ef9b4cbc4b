//! `report --pprof FILE` writes a gzip-compressed profile.proto whose
//! samples are the `--folded` stacks: decoded here with a small protobuf
//! reader, and read by Go's `go tool pprof`, a reader we did not write
//! (no root needed).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// A decoded protobuf message: field number -> values (varints, or bytes
/// for length-delimited fields).
#[derive(Default, Debug)]
struct Msg {
    ints: BTreeMap<u32, Vec<u64>>,
    bytes: BTreeMap<u32, Vec<Vec<u8>>>,
}

fn varint(b: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*pos];
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
    }
    panic!("varint too long");
}

fn decode(b: &[u8]) -> Msg {
    let mut m = Msg::default();
    let mut pos = 0;
    while pos < b.len() {
        let key = varint(b, &mut pos);
        let field = (key >> 3) as u32;
        match key & 7 {
            0 => m.ints.entry(field).or_default().push(varint(b, &mut pos)),
            2 => {
                let len = varint(b, &mut pos) as usize;
                m.bytes
                    .entry(field)
                    .or_default()
                    .push(b[pos..pos + len].to_vec());
                pos += len;
            }
            t => panic!("unexpected wire type {t} for field {field}"),
        }
    }
    m
}

/// A packed repeated varint field (or its unpacked form).
fn packed(m: &Msg, field: u32) -> Vec<u64> {
    let mut out = m.ints.get(&field).cloned().unwrap_or_default();
    for b in m.bytes.get(&field).into_iter().flatten() {
        let mut pos = 0;
        while pos < b.len() {
            out.push(varint(b, &mut pos));
        }
    }
    out
}

fn int(m: &Msg, field: u32) -> u64 {
    m.ints
        .get(&field)
        .and_then(|v| v.first().copied())
        .unwrap_or(0)
}

fn messages(m: &Msg, field: u32) -> Vec<Msg> {
    m.bytes
        .get(&field)
        .into_iter()
        .flatten()
        .map(|b| decode(b))
        .collect()
}

fn tracer_cli(args: &[&str]) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args(args)
        .output()
        .expect("run tracer-cli");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// The samples of the gzip profile at `prof` as sorted folded lines (root
/// first, as `--folded` writes them), and whether a location has an address.
fn profile_folded(prof: &std::path::Path) -> (Vec<String>, bool) {
    let gz = std::fs::read(prof).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut raw)
        .unwrap();
    let p = decode(&raw);

    let strings: Vec<String> = p.bytes[&6]
        .iter()
        .map(|b| String::from_utf8(b.clone()).unwrap())
        .collect();
    assert_eq!(strings[0], "", "string_table[0] must be empty");
    let s = |i: u64| strings[i as usize].as_str();
    let st = messages(&p, 1);
    assert_eq!(st.len(), 1);
    assert_eq!((s(int(&st[0], 1)), s(int(&st[0], 2))), ("events", "count"));

    // Functions and locations, by id (ids are 1-based and dense).
    let funcs: BTreeMap<u64, String> = messages(&p, 5)
        .iter()
        .map(|f| (int(f, 1), s(int(f, 2)).to_string()))
        .collect();
    let locs: BTreeMap<u64, (u64, String)> = messages(&p, 4)
        .iter()
        .map(|l| {
            let lines = messages(l, 4);
            assert_eq!(lines.len(), 1);
            (int(l, 1), (int(l, 3), funcs[&int(&lines[0], 1)].clone()))
        })
        .collect();
    assert_eq!(
        locs.keys().copied().collect::<Vec<_>>(),
        (1..=locs.len() as u64).collect::<Vec<_>>()
    );

    // Each sample, root first, as a folded line; labels name comm and event.
    let mut folded = Vec::new();
    for sample in messages(&p, 2) {
        let ids = packed(&sample, 1);
        let names: Vec<&str> = ids.iter().rev().map(|i| locs[i].1.as_str()).collect();
        let values = packed(&sample, 2);
        assert_eq!(values.len(), 1);
        let labels: BTreeMap<&str, &str> = messages(&sample, 3)
            .iter()
            .map(|l| (s(int(l, 1)), s(int(l, 2))))
            .collect();
        assert_eq!(labels["comm"], names[0]);
        assert_eq!(labels["event"], *names.last().unwrap());
        folded.push(format!("{} {}", names.join(";"), values[0]));
    }
    folded.sort();
    (folded, locs.values().any(|(addr, _)| *addr != 0))
}

#[test]
fn pprof_profile_holds_the_folded_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let dat = dir.path().join("t.dat");
    ustack_testdata::fixture().write(&dat).unwrap();
    let dat = dat.to_str().unwrap();
    let prof = dir.path().join("profile.pb.gz");
    let out = tracer_cli(&["report", "-i", dat, "--pprof", prof.to_str().unwrap()]);
    assert!(out.is_empty(), "--pprof writes to the file only");

    let (folded, addresses) = profile_folded(&prof);
    let expected = String::from_utf8(tracer_cli(&["report", "-i", dat, "--folded"])).unwrap();
    let mut expected: Vec<String> = expected.lines().map(str::to_string).collect();
    expected.sort();
    assert!(!expected.is_empty());
    assert_eq!(folded, expected);

    // User frames keep their addresses (the fixture symbolizes libc ones).
    assert!(addresses);
}

/// `go tool pprof -traces` of the profile at `prof`: its samples as
/// sorted folded lines (root first, frames joined by `;`, then the count),
/// checking that each sample's `comm` and `event` labels are its root and
/// leaf. Go's caches and temporary files go to `tmp`; nothing is fetched.
fn go_pprof_folded(prof: &Path, tmp: &Path) -> Vec<String> {
    let o = Command::new("go")
        .args(["tool", "pprof", "-traces", "-symbolize=none"])
        .arg(prof)
        .env("HOME", tmp)
        .env("GOCACHE", tmp.join("gocache"))
        .env("PPROF_TMPDIR", tmp)
        .env("GOTOOLCHAIN", "local")
        .current_dir(tmp)
        .stdin(Stdio::null())
        .output()
        .expect("run go tool pprof");
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        o.status.success(),
        "go tool pprof: {}{out}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A header ("Type: events", "Duration: ..."), then each sample after a
    // separator line: its labels as "%10s:  %s", then its frames, leaf
    // first, as "%10s   %s" with the sample's value in the first one.
    let separator = format!("-----------+{}\n", "-".repeat(55));
    let mut blocks = out.split(&separator);
    let header = blocks.next().unwrap();
    assert!(header.lines().any(|l| l == "Type: events"), "{out}");
    assert!(out.ends_with(&separator), "{out}");
    let mut folded = Vec::new();
    for block in blocks.filter(|b| !b.is_empty()) {
        let mut labels = BTreeMap::new();
        let mut frames = Vec::new();
        let mut value = None;
        for line in block.lines() {
            let (left, right) = line.split_at_checked(10).expect(line);
            if let Some(v) = right.strip_prefix(":  ") {
                assert!(frames.is_empty(), "label after frames: {line:?}");
                labels.insert(left.trim_start(), v);
            } else {
                let name = right.strip_prefix("   ").expect(line);
                if frames.is_empty() {
                    value = Some(left.trim_start().parse::<u64>().expect(line));
                } else {
                    assert_eq!(left.trim(), "", "{line:?}");
                }
                frames.push(name);
            }
        }
        frames.reverse();
        assert_eq!(labels.len(), 2, "{block}");
        assert_eq!(labels["comm"], frames[0], "{block}");
        assert_eq!(labels["event"], *frames.last().unwrap(), "{block}");
        folded.push(format!("{} {}", frames.join(";"), value.unwrap()));
    }
    folded.sort();
    folded
}

fn have_go() -> bool {
    Command::new("go")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn go_pprof_reads_the_folded_stacks() {
    if !have_go() {
        return ustack_testdata::skip_unless_ci("needs go (golang-go)");
    }
    let dir = tempfile::tempdir().unwrap();
    let dat = dir.path().join("t.dat");
    ustack_testdata::fixture().write(&dat).unwrap();
    let dat = dat.to_str().unwrap();
    let prof = dir.path().join("profile.pb.gz");
    assert!(tracer_cli(&["report", "-i", dat, "--pprof", prof.to_str().unwrap()]).is_empty());

    let got = go_pprof_folded(&prof, dir.path());
    let want = String::from_utf8(tracer_cli(&["report", "-i", dat, "--folded"])).unwrap();
    let mut want: Vec<String> = want.lines().map(str::to_string).collect();
    want.sort();
    assert!(!want.is_empty());
    assert_eq!(got, want);
}

#[test]
fn pprof_to_an_unwritable_path_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let dat = dir.path().join("t.dat");
    ustack_testdata::fixture().write(&dat).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tracer-cli"))
        .args([
            "report",
            "-i",
            dat.to_str().unwrap(),
            "--pprof",
            "/nonexistent/dir/p.pb.gz",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot create /nonexistent/dir/p.pb.gz"),
        "{err}"
    );
}

#[test]
fn pprof_takes_the_selections_of_the_folded_view() {
    let dir = tempfile::tempdir().unwrap();
    let dat = dir.path().join("t.dat");
    ustack_testdata::fixture().write(&dat).unwrap();
    let dat = dat.to_str().unwrap();
    let prof = dir.path().join("sel.pb.gz");
    for sel in [&["--pid", "100", "-F", "sys_enter"][..], &["--cpu", "1"]] {
        let mut args = vec!["report", "-i", dat, "--pprof", prof.to_str().unwrap()];
        args.extend(sel);
        assert!(tracer_cli(&args).is_empty());
        let mut args = vec!["report", "-i", dat, "--folded"];
        args.extend(sel);
        let want = String::from_utf8(tracer_cli(&args)).unwrap();
        let mut want: Vec<String> = want.lines().map(str::to_string).collect();
        want.sort();
        assert_eq!(want.len(), if sel[0] == "--cpu" { 1 } else { 2 }, "{sel:?}");
        assert_eq!(profile_folded(&prof).0, want, "{sel:?}");
    }
}
