//! The call trees under each `--profile` event: the kernel stacks seen with
//! an event, merged frame by frame from the outermost recorded frame (the
//! first one, where the tracing code is), the branches ordered by the time
//! (then the count) below them, as trace-cmd 3.1.6 draws them.

use std::io::{self, Write};
use ustack_tracedata::field::word_at;

/// One distinct kernel stack of an event and what was timed with it.
#[derive(Debug, Clone, Default)]
pub struct Stack {
    /// The raw `caller` array, as recorded.
    pub caller: Vec<u8>,
    /// How many times it was seen.
    pub count: u64,
    /// The time of those events, summed.
    pub time: u64,
    /// The shortest time and when its stack was recorded.
    pub min: (u64, u64),
    /// The longest time and when its stack was recorded.
    pub max: (u64, u64),
}

impl Stack {
    /// Accounts one more event of `time` whose stack was recorded at `ts`.
    pub fn add(&mut self, time: u64, ts: u64) {
        self.count += 1;
        self.time += time;
        if self.count == 1 || time < self.min.0 {
            self.min = (time, ts);
        }
        if time > self.max.0 {
            self.max = (time, ts);
        }
    }

    /// Merges another task's stack of the same frames (`--by-comm`).
    pub fn merge(&mut self, o: &Stack) {
        self.count += o.count;
        self.time += o.time;
        if self.max.0 < o.max.0 {
            self.max = o.max;
        }
        if self.min.0 > o.min.0 {
            self.min = o.min;
        }
    }
}

/// A frame shared by a run of stacks at one depth.
struct Chain {
    val: u64,
    time: u64,
    count: u64,
    min: (u64, u64),
    max: (u64, u64),
    avg: u64,
    percent: u64,
    children: Vec<Chain>,
}

/// `seconds.microseconds` of a timestamp, the microseconds rounded
/// without carrying into the seconds (as trace-cmd prints them).
pub fn ts_text(ts: u64) -> String {
    format!(
        "{}.{:06}",
        ts / 1_000_000_000,
        (ts % 1_000_000_000 + 500) / 1000
    )
}

/// Frames at `level` and below of the sorted `stacks`.
struct Frames<'a> {
    stacks: &'a [&'a Stack],
    long: usize,
    stop: u64,
}

impl Frames<'_> {
    /// The frame of stack `i` at `level`, or `None` past its end or at the
    /// end marker.
    fn at(&self, i: usize, level: usize) -> Option<u64> {
        let v = word_at(&self.stacks[i].caller, level, self.long)?;
        (v != self.stop).then_some(v)
    }

    /// The branches at `level` of stacks `lo..hi` (they share the frames
    /// above it), heaviest first.
    fn chains(&self, lo: usize, hi: usize, level: usize) -> Vec<Chain> {
        let mut out = Vec::new();
        let mut start = lo;
        let (mut count, mut time, mut min, mut max) = (0, 0, (0, 0), (0, 0));
        let (mut total_time, mut total_count) = (0, 0);
        for i in lo..hi {
            let Some(val) = self.at(i, level) else {
                start = i + 1;
                continue;
            };
            let s = self.stacks[i];
            count += s.count;
            time += s.time;
            if s.max.0 > max.0 {
                max = s.max;
            }
            if i == start || s.min.0 < min.0 {
                min = s.min;
            }
            if i + 1 == hi || self.at(i + 1, level) != Some(val) {
                total_time += time;
                total_count += count;
                out.push(Chain {
                    val,
                    time,
                    count,
                    min,
                    max,
                    avg: time / count.max(1),
                    percent: 0,
                    children: self.chains(start, i + 1, level + 1),
                });
                start = i + 1;
                (count, time) = (0, 0);
                // trace-cmd keeps the previous timestamp of the maximum.
                (min.0, max.0) = (0, 0);
            }
        }
        // A stable sort, as glibc's merge sort: heaviest first.
        out.sort_by(|a, b| b.time.cmp(&a.time).then(b.count.cmp(&a.count)));
        for c in &mut out {
            // Of the time below the parent, or of the count without times.
            c.percent = (c.time * 100 + total_time / 2)
                .checked_div(total_time)
                .or_else(|| (c.count * 100 + total_count / 2).checked_div(total_count))
                .unwrap_or(0);
        }
        out
    }
}

/// Compares two stacks as trace-cmd sorts them: 32-bit words in order,
/// then the longer one last.
fn compare(a: &Stack, b: &Stack) -> std::cmp::Ordering {
    let n = a.caller.len().min(b.caller.len()) / 4 * 4;
    let words = |c: &[u8]| {
        c[..n]
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
            .collect::<Vec<_>>()
    };
    words(&a.caller)
        .cmp(&words(&b.caller))
        .then(a.caller.len().cmp(&b.caller.len()))
}

/// Writes the call tree of `stacks`; `func` names a kernel address.
pub fn write_tree(
    out: &mut dyn Write,
    stacks: &[&Stack],
    long: usize,
    func: &dyn Fn(u64) -> Option<String>,
) -> io::Result<()> {
    let mut sorted = stacks.to_vec();
    sorted.sort_by(|a, b| compare(a, b));
    let frames = Frames {
        stacks: &sorted,
        long,
        stop: if long >= 8 {
            u64::MAX
        } else {
            (1u64 << (long * 8)) - 1
        },
    };
    let chains = frames.chains(0, sorted.len(), 0);
    let mut mask = 0u64;
    Tree { out, func }.chains(&chains, 0, &mut mask)
}

struct Tree<'a, 'o> {
    out: &'o mut dyn Write,
    func: &'a dyn Fn(u64) -> Option<String>,
}

impl Tree<'_, '_> {
    fn indent(&mut self, level: usize, mask: u64) -> io::Result<()> {
        for p in 0..=level {
            let c = if p < 64 && mask & (1 << p) != 0 {
                '|'
            } else {
                ' '
            };
            write!(self.out, "    {c} ")?;
        }
        Ok(())
    }

    fn func(&mut self, val: u64) -> io::Result<()> {
        match (self.func)(val) {
            Some(f) => writeln!(self.out, "{f} (0x{val:x})"),
            None => writeln!(self.out, "0x{val:x}"),
        }
    }

    fn chains(&mut self, chains: &[Chain], level: usize, mask: &mut u64) -> io::Result<()> {
        if chains.is_empty() {
            return Ok(());
        }
        let bit = if level + 1 < 64 {
            1u64 << (level + 1)
        } else {
            0
        };
        *mask |= bit;
        self.indent(level + 1, *mask)?;
        writeln!(self.out)?;
        let mut line = '|';
        for (i, c) in chains.iter().enumerate() {
            self.indent(level, *mask)?;
            write!(self.out, "    + ")?;
            if i + 1 == chains.len() {
                *mask &= !bit;
                line = ' ';
            }
            self.func(c.val)?;
            self.indent(level, *mask)?;
            write!(self.out, "    {line}   {}% ({})", c.percent, c.count)?;
            if c.time > 0 {
                write!(
                    self.out,
                    " time:{} max:{}(ts:{}) min:{}(ts:{}) avg:{}",
                    c.time,
                    c.max.0,
                    ts_text(c.max.1),
                    c.min.0,
                    ts_text(c.min.1),
                    c.avg
                )?;
            }
            writeln!(self.out)?;
            let mut child = &c.children;
            while child.len() == 1 {
                self.indent(level, *mask)?;
                write!(self.out, "    {line}    ")?;
                self.func(child[0].val)?;
                child = &child[0].children;
            }
            self.chains(child, level + 1, mask)?;
            self.indent(level + 1, *mask)?;
            writeln!(self.out)?;
        }
        *mask &= !bit;
        self.indent(level, *mask)?;
        writeln!(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(frames: &[u64], time: u64, ts: u64) -> Stack {
        let mut s = Stack {
            caller: frames.iter().flat_map(|f| f.to_le_bytes()).collect(),
            ..Stack::default()
        };
        s.add(time, ts);
        s
    }

    #[test]
    fn one_branch_then_two() {
        let a = stack(&[0x10, 0x20, 0x30], 300, 1_000_000_000);
        let b = stack(&[0x10, 0x20, 0x40], 100, 2_000_000_000);
        let name = |v: u64| (v == 0x10).then(|| "f".to_string());
        let mut out = Vec::new();
        write_tree(&mut out, &[&b, &a], 8, &name).unwrap();
        let want = "          | \n\
\x20         + f (0x10)\n\
\x20             100% (2) time:400 max:300(ts:1.000000) min:100(ts:2.000000) avg:200\n\
\x20              0x20\n\
\x20               | \n\
\x20               + 0x30\n\
\x20               |   75% (1) time:300 max:300(ts:1.000000) min:300(ts:1.000000) avg:300\n\
\x20               | \n\
\x20               + 0x40\n\
\x20                   25% (1) time:100 max:100(ts:2.000000) min:100(ts:2.000000) avg:100\n\
\x20                 \n\
\x20           \n\
\x20           \n\
\x20     \n";
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn rounding_of_the_microseconds_does_not_carry() {
        assert_eq!(ts_text(1_999_999_600), "1.1000000");
    }
}
