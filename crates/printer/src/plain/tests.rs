use super::*;
use ustack_traceevent as tep;

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

/// Fields of the test event after the common ones: every size, signed and
/// not, and a long.
const FIELDS: &str = "\tfield:char c;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield:unsigned char uc;\toffset:9;\tsize:1;\tsigned:0;\n\
\tfield:short s;\toffset:10;\tsize:2;\tsigned:1;\n\
\tfield:int i;\toffset:12;\tsize:4;\tsigned:1;\n\
\tfield:unsigned int u;\toffset:16;\tsize:4;\tsigned:0;\n\
\tfield:long l;\toffset:24;\tsize:8;\tsigned:1;\n\
\tfield:unsigned long ul;\toffset:32;\tsize:8;\tsigned:0;\n\
\tfield:char name[16];\toffset:40;\tsize:16;\tsigned:1;\n";

fn format_text(id: u16, print_fmt: &str) -> String {
    format!("name: ev{id}\nID: {id}\nformat:\n{COMMON}\n{FIELDS}\nprint fmt: {print_fmt}\n")
}

/// A small xorshift generator: records with every kind of value, often
/// around the sign bits and zero.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn record(&mut self, id: u16, len: usize) -> Vec<u8> {
        let mut d: Vec<u8> = (0..len).map(|_| self.next() as u8).collect();
        // Runs of 0x00, 0xff and 0x80 make zero, -1 and minimum values.
        for b in d.iter_mut().skip(8) {
            match self.next() % 8 {
                0 => *b = 0,
                1 => *b = 0xff,
                2 => *b = 0x80,
                _ => {}
            }
        }
        d[0..2].copy_from_slice(&id.to_le_bytes());
        d
    }
}

fn libtraceevent_info(t: &tep::Tep, data: &[u8]) -> Vec<u8> {
    let mut seq = tep::TraceSeq::new();
    t.print(
        &mut seq,
        &mut tep::Record::new(data, 1, 0),
        tep::Print::Info,
    );
    seq.as_bytes().to_vec()
}

/// Compiles `text` and compares its output with libtraceevent's on
/// `rounds` generated records; false when it does not compile.
fn check(t: &mut tep::Tep, text: &str, system: &str, rounds: usize, g: &mut Gen) -> bool {
    let Ok(f) = EventFormat::parse(system, text) else {
        return false;
    };
    let Some(plain) = Plain::compile(&f, 8) else {
        return false;
    };
    if t.parse_event(text.as_bytes(), system).is_err() || !t.event_is_plain(f.id) {
        return false;
    }
    let len = f
        .fields
        .iter()
        .map(|x| x.offset + x.size)
        .max()
        .unwrap_or(8)
        .max(8);
    for _ in 0..rounds {
        let d = g.record(f.id, len);
        let mut ours = Vec::new();
        assert!(plain.write(&d, &mut ours));
        let want = libtraceevent_info(t, &d);
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&want),
            "{system}:{} print fmt {} record {d:02x?}",
            f.name,
            f.print_fmt
        );
    }
    true
}

#[test]
fn plain_matches_libtraceevent() {
    let fmts = [
        r#""""#,
        r#""no conversions""#,
        r#""fd: 0x%08lx, buf: 0x%08lx, count: 0x%08lx", ((unsigned long)(REC->i)), ((unsigned long)(REC->ul)), ((unsigned long)(REC->u))"#,
        r#""0x%lx", REC->l"#,
        r#""%d %i %u %x %X", REC->i, REC->i, REC->i, REC->i, REC->i"#,
        r#""%ld %lu %lld %llu %llx", REC->l, REC->l, REC->ul, REC->ul, REC->l"#,
        r#""%hd %hu %hx %hhd %hhu %hhx", REC->s, REC->s, REC->s, REC->c, REC->uc, REC->c"#,
        r#""[%5d] [%-5d] [%05d] [%.3d] [%8.3d] [%-8.3x] [%#x] [%#08x] [%.0d]", REC->i, REC->i, REC->i, REC->i, REC->i, REC->u, REC->u, REC->u, REC->c"#,
        r#""%d %d %ld", (int)REC->l, ((short)(REC->l)), ((long)(REC->i))"#,
        r#""%u %lu %llu", (unsigned char)REC->ul, (u16)REC->ul, (u32)(REC->l)"#,
        r#""pid=%d flags=%x", REC->common_pid, REC->common_flags"#,
        r#""%ld %d", (s64)REC->l, (s8)REC->i"#,
    ];
    let mut t = tep::Tep::new(8, 4096).unwrap();
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    for (n, p) in fmts.iter().enumerate() {
        let text = format_text(100 + n as u16, p);
        assert!(
            check(&mut t, &text, "test", 500, &mut g),
            "{p} did not compile"
        );
    }
}

#[test]
fn what_libtraceevent_alone_knows_is_not_compiled() {
    for p in [
        r#""%s", REC->name"#,
        r#""%p", REC->ul"#,
        r#""%pS", REC->ul"#,
        r#""%d", REC->i + 1"#,
        r#""%d", REC->i ? 1 : 0"#,
        r#""%s", __print_symbolic(REC->i, { 0, "a" })"#,
        r#""%s", __get_str(name)"#,
        r#""a\tb""#,
        r#""100%%""#,
        r#""%*d", REC->i, REC->i"#,
        r#""%d""#,
        r#""%d", REC->i, REC->i"#,
        r#""%d", REC->name"#,
        r#""%d", REC->nope"#,
        r#""%d", (bool)REC->i"#,
        r#""%d", (void *)REC->i"#,
        r#""%zu", REC->ul"#,
        r#""%o", REC->ul"#,
        r#""%100d", REC->i"#,
    ] {
        let f = EventFormat::parse("test", &format_text(7, p)).unwrap();
        assert_eq!(Plain::compile(&f, 8), None, "{p}");
    }
    let f = EventFormat::parse("test", &format_text(7, r#""%d", REC->i"#)).unwrap();
    assert!(Plain::compile(&f, 4).is_none());
    let plain = Plain::compile(&f, 8).unwrap();
    let mut out = Vec::new();
    assert!(!plain.write(&[0; 15], &mut out));
    assert!(out.is_empty());
    assert!(plain.write(&[0; 16], &mut out));
    assert_eq!(out, b"0");
}

/// Every format of the running kernel that compiles prints as
/// libtraceevent prints it.
#[test]
#[ignore = "needs root and tracefs"]
fn plain_matches_libtraceevent_on_every_host_format() {
    let root = std::path::Path::new("/sys/kernel/tracing/events");
    let mut t = tep::Tep::new(8, 4096).unwrap();
    let mut g = Gen(0x2545_f491_4f6c_dd1d);
    let (mut total, mut compiled) = (0, 0);
    for sys in std::fs::read_dir(root).unwrap().flatten() {
        let Ok(events) = std::fs::read_dir(sys.path()) else {
            continue;
        };
        let system = sys.file_name().to_string_lossy().into_owned();
        for ev in events.flatten() {
            let Ok(text) = std::fs::read_to_string(ev.path().join("format")) else {
                continue;
            };
            total += 1;
            if check(&mut t, &text, &system, 50, &mut g) {
                compiled += 1;
            }
        }
    }
    eprintln!("{compiled} of {total} host formats compiled and matched");
    assert!(total > 100 && compiled > total / 4, "{compiled} of {total}");
}
