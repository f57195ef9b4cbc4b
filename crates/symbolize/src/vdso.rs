//! The vDSO of the traced kernel.
//!
//! Frames in `[vdso]` (a system call the vDSO makes itself, such as
//! `clock_gettime` of a clock without a fast path) need the vDSO's image:
//! its CFI to unwind past them, its symbols to name them. The vDSO is not
//! a file the trace names, so it is found by the kernel release in the
//! trace's uname:
//!
//! 1. this process's own vDSO, when the trace was recorded on the running
//!    kernel (release and version equal);
//! 2. else the image that the kernel's `make vdso_install` installs,
//!    `lib/modules/RELEASE/vdso/vdso64.so`, under the sysroot (`--symfs`)
//!    first, then under `/`. For a guest's trace read on the host, that is
//!    `make vdso_install INSTALL_MOD_PATH=SYMFS` in the guest kernel's
//!    build tree (or a copy of its `arch/x86/entry/vdso/vdso64.so.dbg`).
//!
//! A file of another build with the same release string gives wrong
//! frames: the image carries no build identity the trace could be checked
//! against.

use std::path::{Path, PathBuf};

use crate::elf::open_file;

/// The vDSO image of a traced kernel, and where it came from.
#[derive(Debug, Clone)]
pub struct Vdso {
    /// The ELF image.
    pub image: Vec<u8>,
    /// The file it was read from; `None`: this process's own vDSO.
    pub file: Option<PathBuf>,
}

/// The kernel release in a trace's uname
/// (`sysname nodename release version machine`).
pub fn release(uname: &str) -> Option<&str> {
    uname.split(' ').nth(2).filter(|r| !r.is_empty())
}

/// Where `make vdso_install` puts the 64-bit vDSO of kernel `release`.
pub fn installed_path(release: &str) -> PathBuf {
    PathBuf::from(format!("/lib/modules/{release}/vdso/vdso64.so"))
}

/// The vDSO of the kernel whose uname is `uname` (see the module doc for
/// the order), with files looked up under `root` first.
pub fn find(uname: &str, root: Option<&Path>) -> Option<Vdso> {
    if let Some(image) = of_running_kernel(uname) {
        return Some(Vdso { image, file: None });
    }
    let (file, map) = open_file(&installed_path(release(uname)?), root)?;
    Some(Vdso {
        image: map.bytes().to_vec(),
        file: Some(file),
    })
}

/// The vDSO image of the running kernel, read from this process's own
/// `[vdso]` mapping; `None` when the running kernel is not the one of
/// `uname`: another kernel's vDSO would give wrong frames.
pub fn of_running_kernel(uname: &str) -> Option<Vec<u8>> {
    let (release, version) = crate::procfs::running_kernel()?;
    let want = format!("{release} {version}");
    // sysname nodename release version... (the version has spaces)
    let rest: Vec<&str> = uname.split(' ').skip(2).collect();
    if !rest.join(" ").starts_with(&want) {
        return None;
    }
    crate::procfs::own_vdso()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_is_the_third_field() {
        assert_eq!(
            release("Linux guest 7.3.4-ustack #1 SMP PREEMPT x86_64"),
            Some("7.3.4-ustack")
        );
        assert_eq!(release("Linux guest"), None);
        assert_eq!(release(""), None);
    }

    #[test]
    fn another_kernel_needs_an_installed_file() {
        let uname = "Linux nowhere 0.0.0-not-installed #1 x86_64";
        assert!(of_running_kernel(uname).is_none());
        assert!(find(uname, None).is_none());
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("lib/modules/0.0.0-not-installed/vdso");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vdso64.so"), b"\x7fELF image").unwrap();
        let v = find(uname, Some(root.path())).expect("found under the sysroot");
        assert_eq!(v.image, b"\x7fELF image");
        assert_eq!(v.file, Some(dir.join("vdso64.so")));
    }
}
