//! Decompression of metadata sections and CPU data chunks (zlib, zstd).

use crate::error::{Error, Result};
use crate::limits::{self, Budget};

/// Largest metadata section or chunk we agree to decompress (1 GiB).
pub(super) const MAX_UNCOMPRESSED: usize = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Codec {
    None,
    Zlib,
    Zstd,
}

pub(super) fn decompress(
    codec: Codec,
    input: &[u8],
    usize_: usize,
    budget: &Budget,
) -> Result<Vec<u8>> {
    limits::check_ratio(input.len(), usize_)?;
    budget.take(usize_)?;
    if usize_ > MAX_UNCOMPRESSED {
        return Err(Error::corrupt(format!(
            "uncompressed size {usize_} is over the {MAX_UNCOMPRESSED} byte limit"
        )));
    }
    let mut out = Vec::new();
    out.try_reserve_exact(usize_)
        .map_err(|_| Error::corrupt(format!("cannot allocate {usize_} bytes")))?;
    out.resize(usize_, 0);
    ChunkDecoder::new(codec)?.fill(input, &mut out)?;
    Ok(out)
}

/// One decompressor context, reused for all the chunks of a CPU.
pub(super) enum ChunkDecoder {
    Zstd(zstd::bulk::Decompressor<'static>),
    Zlib(flate2::Decompress),
}

impl ChunkDecoder {
    pub(super) fn new(codec: Codec) -> Result<ChunkDecoder> {
        match codec {
            Codec::None => Err(Error::corrupt("compressed data in an uncompressed file")),
            Codec::Zstd => zstd::bulk::Decompressor::new()
                .map(ChunkDecoder::Zstd)
                .map_err(|e| Error::decompress(format!("zstd: {e}"))),
            Codec::Zlib => Ok(ChunkDecoder::Zlib(flate2::Decompress::new(true))),
        }
    }

    /// Decompresses `input` (one whole frame or zlib stream) into `out`,
    /// which it must fill exactly.
    pub(super) fn fill(&mut self, input: &[u8], out: &mut [u8]) -> Result<()> {
        let want = out.len();
        let got = match self {
            ChunkDecoder::Zstd(d) => d
                .decompress_to_buffer(input, out)
                .map_err(|e| Error::decompress(format!("zstd: {e}")))?,
            ChunkDecoder::Zlib(d) => {
                d.reset(true);
                loop {
                    let before = (d.total_in(), d.total_out());
                    let (i, o) = (d.total_in() as usize, d.total_out() as usize);
                    let status = d
                        .decompress(&input[i..], &mut out[o..], flate2::FlushDecompress::Finish)
                        .map_err(|e| Error::decompress(format!("zlib: {e}")))?;
                    match status {
                        flate2::Status::StreamEnd => break d.total_out() as usize,
                        _ if (d.total_in(), d.total_out()) == before => {
                            if d.total_out() as usize == want {
                                return Err(Error::decompress(format!(
                                    "more than the {want} bytes the header says"
                                )));
                            }
                            return Err(Error::decompress("zlib: stream ends early"));
                        }
                        _ => {}
                    }
                }
            }
        };
        if got != want {
            return Err(Error::decompress(format!(
                "got {got} bytes, header says {want}"
            )));
        }
        Ok(())
    }
}
