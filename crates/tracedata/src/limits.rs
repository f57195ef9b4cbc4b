//! Bounds on what a trace.dat file may ask the reader to allocate.
//!
//! A hostile file can declare sizes far beyond what its bytes can hold (a
//! 130 KB file declaring 4 GiB of zstd chunks, a 2.4 KB section declaring a
//! 1 GiB kallsyms, 4 billion CPUs). These checks turn such files into one
//! clear error before anything is allocated.

use std::cell::Cell;

use crate::error::{Error, Result};

/// Largest CPU count and CPU number + 1 a file may declare: the kernel's
/// largest `NR_CPUS` (x86 `MAXSMP`).
pub const MAX_CPUS: u32 = 8192;

/// Largest ratio of uncompressed to compressed size accepted: zlib cannot
/// exceed 1032:1, and ring-buffer pages and metadata text compress far
/// less with either codec (trace-cmd's own files stay below 50:1).
pub const MAX_RATIO: usize = 1024;

/// Uncompressed bytes that any compressed piece may have, whatever its size
/// (zstd frame and block headers make tiny inputs look expansive).
const SLACK: usize = 64 << 10;

/// Checks that `csize` compressed bytes can sensibly hold `usize_` bytes.
pub(crate) fn check_ratio(csize: usize, usize_: usize) -> Result<()> {
    if usize_ > csize.saturating_mul(MAX_RATIO).saturating_add(SLACK) {
        return Err(Error::corrupt(format!(
            "{csize} compressed bytes declare {usize_} bytes, more than \
             {MAX_RATIO} times as many"
        )));
    }
    Ok(())
}

/// The decompressed bytes one file may still use: half of the machine's
/// memory at open, shared by all its sections and CPUs.
#[derive(Debug)]
pub(crate) struct Budget {
    left: Cell<usize>,
    total: usize,
}

impl Budget {
    /// Half of `MemTotal` (4 GiB if /proc/meminfo cannot be read).
    pub(crate) fn of_machine() -> Budget {
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let kib: usize = m
                    .lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()?;
                Some(kib.saturating_mul(1024) / 2)
            })
            .unwrap_or(4 << 30);
        Budget::new(total)
    }

    /// A budget of `total` bytes.
    pub(crate) fn new(total: usize) -> Budget {
        Budget {
            left: Cell::new(total),
            total,
        }
    }

    /// The whole budget, in bytes.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// Takes `n` bytes from the budget, or fails if they are not left.
    pub(crate) fn take(&self, n: usize) -> Result<()> {
        let left = self.left.get();
        if n > left {
            return Err(Error::corrupt(format!(
                "decompressing needs {n} more bytes, over the memory budget of \
                 {} bytes (half of RAM) with {left} left",
                self.total
            )));
        }
        self.left.set(left - n);
        Ok(())
    }
}

/// Checks a CPU count or CPU number + 1 against [`MAX_CPUS`].
pub(crate) fn check_cpus(what: &str, n: u64) -> Result<()> {
    if n > u64::from(MAX_CPUS) {
        return Err(Error::corrupt(format!(
            "{what} {n} is more than the {MAX_CPUS} CPUs Linux supports"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_budget_and_cpus() {
        assert!(check_ratio(100, 100 * 1024 + (64 << 10)).is_ok());
        let e = check_ratio(32768, 1 << 30).unwrap_err().to_string();
        assert!(
            e.contains("32768 compressed bytes declare 1073741824 bytes"),
            "{e}"
        );
        let b = Budget::new(1000);
        b.take(600).unwrap();
        let e = b.take(401).unwrap_err().to_string();
        assert!(
            e.contains("budget of 1000 bytes (half of RAM) with 400 left"),
            "{e}"
        );
        b.take(400).unwrap();
        assert!(check_cpus("CPU count", 8192).is_ok());
        let e = check_cpus("CPU count", 0xffff_ffff)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("CPU count 4294967295 is more than the 8192"),
            "{e}"
        );
        assert!(Budget::of_machine().total > 0);
    }
}
