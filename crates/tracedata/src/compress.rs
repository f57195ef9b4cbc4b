//! Compression for trace.dat version 7 files, writer side.
//!
//! A v7 file names its compression algorithm once, in the file header
//! (`"name\0version\0"`), and then uses it in two shapes:
//!
//! - a compressed metadata section is one *block*:
//!   `u32 compressed size, u32 uncompressed size, data`;
//! - the per-CPU trace data of a buffer is a list of *chunks*:
//!   `u32 chunk count`, then per chunk `u32 compressed size,
//!   u32 uncompressed size, data`, each chunk holding
//!   [`PAGES_IN_CHUNK`](crate::dat::PAGES_IN_CHUNK) whole ring-buffer pages
//!   (the last one fewer).
//!
//! Each block or chunk is one complete zstd frame, so a reader can
//! decompress any chunk on its own. Only `none` and `zstd` are written;
//! Debian's trace-cmd 3.1.6 is built with zstd only.

use std::io;

use crate::dat;

/// The compression algorithm of a v7 file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// No compression: the header says `"none\0\0"`, sections are stored as is.
    None,
    /// zstd, one frame per metadata section and per chunk of pages.
    #[default]
    Zstd,
}

impl Compression {
    /// The algorithm name written into the file header.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => dat::COMPRESSION_NONE,
            Compression::Zstd => dat::COMPRESSION_ZSTD,
        }
    }

    /// The algorithm version written into the file header: empty for
    /// `none`, the linked libzstd version (e.g. `1.5.4`) for zstd, as
    /// trace-cmd writes it.
    pub fn version(self) -> String {
        match self {
            Compression::None => String::new(),
            Compression::Zstd => {
                let v = zstd::zstd_safe::version_number();
                format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100)
            }
        }
    }

    /// Parses a name as given on a command line (`none`, `zstd`).
    pub fn from_name(name: &str) -> Option<Compression> {
        match name {
            "none" => Some(Compression::None),
            "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// zstd level used for everything; zstd's own default, a good speed/size
/// trade-off for trace pages.
const ZSTD_LEVEL: i32 = 3;

/// A reusable compressor for one algorithm (keeps its context between calls).
pub struct Compressor {
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("zstd", &self.zstd.is_some())
            .finish()
    }
}

impl Compressor {
    /// A compressor for `algo`. For [`Compression::None`] the data is copied.
    pub fn new(algo: Compression) -> io::Result<Compressor> {
        let zstd = match algo {
            Compression::None => None,
            Compression::Zstd => Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?),
        };
        Ok(Compressor { zstd })
    }

    /// Compresses `data` into one frame, replacing the contents of `out`.
    pub fn compress_into(&mut self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        match &mut self.zstd {
            None => out.extend_from_slice(data),
            Some(c) => {
                out.reserve(zstd::zstd_safe::compress_bound(data.len()));
                c.compress_to_buffer(data, out)?;
            }
        }
        Ok(())
    }

    /// Compresses `data` as one v7 block: `u32 csize, u32 usize, frame`
    /// (numbers in host byte order, the order the writer uses).
    pub fn block(&mut self, data: &[u8]) -> io::Result<Vec<u8>> {
        let usize32 = to_u32(data.len(), "uncompressed block")?;
        let mut frame = Vec::new();
        self.compress_into(data, &mut frame)?;
        let csize32 = to_u32(frame.len(), "compressed block")?;
        let mut out = Vec::with_capacity(8 + frame.len());
        out.extend_from_slice(&csize32.to_ne_bytes());
        out.extend_from_slice(&usize32.to_ne_bytes());
        out.extend_from_slice(&frame);
        Ok(out)
    }
}

/// Converts a length to the u32 the file format stores, or fails with a
/// message naming what was too large.
pub(crate) fn to_u32(len: usize, what: &str) -> io::Result<u32> {
    u32::try_from(len).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} of {len} bytes does not fit the file's 32-bit size field"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions() {
        assert_eq!(Compression::None.name(), "none");
        assert_eq!(Compression::None.version(), "");
        assert_eq!(Compression::Zstd.name(), "zstd");
        let v = Compression::Zstd.version();
        assert_eq!(v.split('.').count(), 3, "version {v:?}");
        assert_eq!(Compression::from_name("zstd"), Some(Compression::Zstd));
        assert_eq!(Compression::from_name("none"), Some(Compression::None));
        assert_eq!(Compression::from_name("zlib"), None);
    }

    #[test]
    fn none_block_is_the_data_with_sizes() {
        let mut c = Compressor::new(Compression::None).unwrap();
        let b = c.block(b"abc").unwrap();
        assert_eq!(b, [3, 0, 0, 0, 3, 0, 0, 0, b'a', b'b', b'c']);
    }

    #[test]
    fn zstd_block_round_trips() {
        let data: Vec<u8> = (0..20000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        let mut c = Compressor::new(Compression::Zstd).unwrap();
        let b = c.block(&data).unwrap();
        let csize = u32::from_ne_bytes(b[0..4].try_into().unwrap()) as usize;
        let usize_ = u32::from_ne_bytes(b[4..8].try_into().unwrap()) as usize;
        assert_eq!(usize_, data.len());
        assert_eq!(csize, b.len() - 8);
        assert!(csize < data.len() / 4, "csize {csize}");
        // zstd frame magic
        assert_eq!(&b[8..12], &[0x28, 0xb5, 0x2f, 0xfd]);
        let back = zstd::bulk::decompress(&b[8..], usize_).unwrap();
        assert_eq!(back, data);
    }
}
