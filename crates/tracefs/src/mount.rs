//! Finding (and if needed mounting) tracefs.

use crate::error::{Error, Op, Result};
use std::path::{Path, PathBuf};

const DEFAULT: &str = "/sys/kernel/tracing";

fn looks_like_tracefs(p: &Path) -> bool {
    p.join("events").is_dir() && p.join("trace").exists()
}

/// Unescapes the octal escapes (`\040` for space...) of mountinfo paths.
pub(crate) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Mount points of `tracefs` and `debugfs` listed in a mountinfo text.
pub(crate) fn parse_mountinfo(text: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut tracefs = Vec::new();
    let mut debugfs = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mnt) = left.split(' ').nth(4) else {
            continue;
        };
        let mnt = PathBuf::from(unescape(mnt));
        match right.split(' ').next() {
            Some("tracefs") => tracefs.push(mnt),
            Some("debugfs") => debugfs.push(mnt),
            _ => {}
        }
    }
    (tracefs, debugfs)
}

/// Finds a mounted tracefs. A tracefs that exists but cannot be read (not
/// root) is reported as a permission error on that directory.
pub(crate) fn find() -> Result<PathBuf> {
    let default = Path::new(DEFAULT);
    if looks_like_tracefs(default) {
        return Ok(default.to_path_buf());
    }
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| Error::io(Op::Read, "/proc/self/mountinfo", e))?;
    let (tracefs, debugfs) = parse_mountinfo(&text);
    let mut denied = None;
    for p in tracefs
        .into_iter()
        .chain(debugfs.into_iter().map(|d| d.join("tracing")))
    {
        if looks_like_tracefs(&p) {
            return Ok(p);
        }
        if let Err(e) = std::fs::read_dir(&p) {
            if e.kind() == std::io::ErrorKind::PermissionDenied && denied.is_none() {
                denied = Some(Error::io(Op::Open, p.display().to_string(), e));
            }
        }
    }
    Err(denied.unwrap_or_else(|| Error::NotMounted("tracefs is not mounted".into())))
}

/// Mounts tracefs on /sys/kernel/tracing.
pub(crate) fn mount_default() -> Result<PathBuf> {
    use nix::mount::{mount, MsFlags};
    let target = Path::new(DEFAULT);
    if !target.is_dir() {
        return Err(Error::NotMounted(format!(
            "tracefs is not mounted and {DEFAULT} does not exist"
        )));
    }
    mount(
        Some("tracefs"),
        target,
        Some("tracefs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| {
        Error::NotMounted(format!(
            "tracefs is not mounted, and mounting it on {DEFAULT} failed: {}",
            e.desc()
        ))
    })?;
    if looks_like_tracefs(target) {
        Ok(target.to_path_buf())
    } else {
        Err(Error::NotMounted(format!(
            "mounted {DEFAULT} but it has no events/"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines() {
        let text = "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n\
42 23 0:13 / /sys/kernel/tracing rw,relatime - tracefs tracefs rw\n\
43 23 0:7 / /sys/kernel/debug rw,relatime - debugfs debugfs rw\n\
44 23 0:14 / /mnt/my\\040trace rw shared:5 - tracefs tracefs rw\n\
garbage\n";
        let (t, d) = parse_mountinfo(text);
        assert_eq!(
            t,
            vec![
                PathBuf::from("/sys/kernel/tracing"),
                PathBuf::from("/mnt/my trace")
            ]
        );
        assert_eq!(d, vec![PathBuf::from("/sys/kernel/debug")]);
        assert_eq!(unescape("a\\134b\\0"), "a\\b\\0");
    }
}
