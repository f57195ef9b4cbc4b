//! An array of plain values that lives in an unlinked temporary file once
//! it grows large, so that an index of tens of millions of events does not
//! have to stay resident.
//!
//! [`SpillVec`] starts as an ordinary vector. Past [`SPILL_BYTES`] it moves
//! into a temporary file mapped shared (as the decompressed data of
//! [`crate::reader`] does) and keeps growing there. Pages the writer has
//! passed are given back to the kernel as it goes, and a reader that went
//! over the whole array gives them back with [`SpillVec::release`]: they
//! stay in the page cache, the kernel may write them out under memory
//! pressure, and the next access reads them again. Where no temporary file
//! can be made the array stays in memory.
//!
//! [`set_memory_budget`] lets arrays grow in memory past [`SPILL_BYTES`]
//! while all of them together stay within a budget: a whole index that
//! fits is built without the cost of temporary files (making and giving
//! back their pages), and a larger one still spills.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::fs::File;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Values that are plain bytes: safe to store in a file and read back.
///
/// # Safety
///
/// The type has no padding, no pointers or references, no `Drop`, and any
/// bytes written by a value of it read back as that value. Its alignment
/// is at most a page.
pub unsafe trait Plain: Copy + 'static {}

// SAFETY: integers are plain bytes.
unsafe impl Plain for u8 {}
// SAFETY: as above.
unsafe impl Plain for u16 {}
// SAFETY: as above.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for u64 {}

/// Size from which a [`SpillVec`] moves into a temporary file.
pub const SPILL_BYTES: usize = 1 << 20;

/// Bytes the in-memory arrays of this process hold (their capacity).
static IN_MEMORY: AtomicUsize = AtomicUsize::new(0);
/// What they may hold together (see [`set_memory_budget`]).
static BUDGET: AtomicUsize = AtomicUsize::new(0);

/// Lets the arrays of this process hold up to `bytes` in memory together:
/// past [`SPILL_BYTES`], an array that must grow spills unless the others
/// and its doubling fit. An array of up to [`SPILL_BYTES`] always stays in
/// memory. 0, the default, spills each array at [`SPILL_BYTES`]: the least
/// memory. Arrays already spilled stay in their files.
pub fn set_memory_budget(bytes: usize) {
    BUDGET.store(bytes, Ordering::Relaxed);
}

/// Bytes the in-memory arrays of this process hold now.
pub fn in_memory() -> usize {
    IN_MEMORY.load(Ordering::Relaxed)
}

/// Whether `extra` more bytes in memory stay within the budget.
fn fits_in_memory(extra: usize) -> bool {
    IN_MEMORY.load(Ordering::Relaxed).saturating_add(extra) <= BUDGET.load(Ordering::Relaxed)
}

/// Values sorted in one run by [`SpillVec::into_sorted_by_key`].
pub const SORT_RUN: usize = 1 << 20;

/// Written bytes between two releases of the pages behind the writer.
const RELEASE_STEP: usize = 1 << 20;

const PAGE: usize = 4096;

/// A growable array of [`Plain`] values, in memory while small and in a
/// mapped temporary file once large; see the module documentation.
pub struct SpillVec<T: Plain> {
    store: Store<T>,
    len: usize,
    /// Bytes from the start whose pages were given back behind the writer.
    released: usize,
    /// Bytes of [`IN_MEMORY`] this array holds: its vector's capacity.
    counted: usize,
    _t: PhantomData<T>,
}

/// Where the values are.
///
/// # Invariants
/// `Mem`: the vector holds exactly `len` values. `File`: `map` maps all of
/// `file`, which is `cap * size_of::<T>()` bytes long, unlinked and open
/// only here; `len <= cap`.
enum Store<T> {
    Mem(Vec<T>),
    File {
        file: File,
        map: memmap2::MmapMut,
        cap: usize,
    },
}

impl<T: Plain> Default for SpillVec<T> {
    fn default() -> Self {
        SpillVec {
            store: Store::Mem(Vec::new()),
            len: 0,
            released: 0,
            counted: 0,
            _t: PhantomData,
        }
    }
}

impl<T: Plain + fmt::Debug> fmt::Debug for SpillVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = match self.store {
            Store::Mem(_) => "in memory",
            Store::File { .. } => "in a temporary file",
        };
        write!(f, "<{} values {place}>", self.len)
    }
}

impl<T: Plain> Clone for SpillVec<T> {
    fn clone(&self) -> Self {
        self.iter().copied().collect()
    }
}

impl<T: Plain> SpillVec<T> {
    /// An empty array.
    pub fn new() -> Self {
        Self::default()
    }

    /// `n` copies of `v`.
    pub fn filled(v: T, n: usize) -> Self {
        let mut s = Self::new();
        for _ in 0..n {
            s.push(v);
        }
        s
    }

    /// Whether the values are in a temporary file.
    pub fn spilled(&self) -> bool {
        matches!(self.store, Store::File { .. })
    }

    /// Appends a value.
    pub fn push(&mut self, v: T) {
        let size = std::mem::size_of::<T>();
        if let Store::Mem(vals) = &self.store {
            // Past SPILL_BYTES a vector stays in memory only within the
            // budget: as it is (its capacity is counted already), or, when
            // it must grow, with room for its doubling and for the copy
            // (the old buffer lives until the new one is filled).
            let stays = (vals.len() + 1) * size <= SPILL_BYTES
                || if vals.len() < vals.capacity() {
                    fits_in_memory(0)
                } else {
                    fits_in_memory(2 * vals.capacity() * size)
                };
            if stays || !self.spill() {
                if let Store::Mem(vals) = &mut self.store {
                    vals.push(v);
                    self.len += 1;
                }
                self.recount();
                return;
            }
        }
        let Store::File { cap, .. } = &self.store else {
            unreachable!("spilled above")
        };
        if self.len == *cap && !self.grow() {
            // Out of disk: keep going in memory rather than lose data.
            self.unspill();
            return self.push(v);
        }
        let Store::File { map, .. } = &mut self.store else {
            unreachable!("still spilled")
        };
        // SAFETY: `len < cap` (grown above), so the slot lies in the map
        // (type invariant); the map is page-aligned and T's alignment is at
        // most a page (Plain), so the slot is aligned.
        unsafe { map.as_mut_ptr().cast::<T>().add(self.len).write(v) };
        self.len += 1;
        // Pages a step behind the writer are given back: writers (the
        // stitcher's groups) often change values written a little before.
        let written = self.len * size;
        if written >= self.released + 2 * RELEASE_STEP {
            let end = (written - RELEASE_STEP) / PAGE * PAGE;
            self.advise(self.released..end);
            self.released = end;
        }
    }

    /// Gives every page of a spilled array back to the kernel: for readers
    /// that went over much of it. Values read later are read again from
    /// the temporary file.
    pub fn release(&self) {
        if let Store::File { map, .. } = &self.store {
            self.advise(0..map.len());
        }
    }

    /// Gives the pages of values `r` (indexes) back to the kernel, as
    /// [`SpillVec::release`] does for all: for readers that went over them
    /// in order. Pages the range shares with values outside it stay.
    pub fn release_range(&self, r: std::ops::Range<usize>) {
        let size = std::mem::size_of::<T>();
        self.advise(r.start * size..r.end * size);
    }

    fn advise(&self, r: std::ops::Range<usize>) {
        let Store::File { map, .. } = &self.store else {
            return;
        };
        let start = r.start.next_multiple_of(PAGE);
        let end = r.end.min(map.len()) / PAGE * PAGE;
        if start < end {
            // SAFETY: MADV_DONTNEED on a shared file mapping only drops
            // this process's page table entries: the bytes stay in the file
            // and the next access reads them again, so no borrowed slice
            // sees a change.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }

    /// Brings [`IN_MEMORY`] up to date with the vector's capacity.
    fn recount(&mut self) {
        let now = match &self.store {
            Store::Mem(vals) => vals.capacity() * std::mem::size_of::<T>(),
            Store::File { .. } => 0,
        };
        if now > self.counted {
            IN_MEMORY.fetch_add(now - self.counted, Ordering::Relaxed);
        } else {
            IN_MEMORY.fetch_sub(self.counted - now, Ordering::Relaxed);
        }
        self.counted = now;
    }

    /// Moves the values into a temporary file; false (and nothing changed)
    /// when none can be made.
    fn spill(&mut self) -> bool {
        if self.spilled() {
            return true;
        }
        let size = std::mem::size_of::<T>().max(1);
        let cap = (2 * SPILL_BYTES / size).max(self.len + 1);
        let Some((file, mut map)) = temp_map(cap * size) else {
            return false;
        };
        let bytes = self.bytes();
        map[..bytes.len()].copy_from_slice(bytes);
        self.store = Store::File { file, map, cap };
        self.released = 0;
        self.recount();
        true
    }

    /// Doubles the file; false when it cannot.
    fn grow(&mut self) -> bool {
        let Store::File { file, map, cap } = &mut self.store else {
            return false;
        };
        let size = std::mem::size_of::<T>().max(1);
        let new_cap = *cap * 2;
        if file.set_len((new_cap * size) as u64).is_err() {
            return false;
        }
        // SAFETY: the file is unlinked and open only here (type invariant):
        // nothing else truncates or writes it while it is mapped.
        let Ok(new_map) = (unsafe { memmap2::MmapMut::map_mut(&*file) }) else {
            return false;
        };
        *map = new_map;
        *cap = new_cap;
        // The new mapping has no pages resident: nothing behind the writer
        // to give back.
        self.released = self.len * size / PAGE * PAGE;
        true
    }

    /// The values sorted by `key` (stable for equal keys only where `key`
    /// breaks ties), with a bounded resident set: runs of [`SORT_RUN`]
    /// values are sorted in place, then merged into a new array when they
    /// overlap. An array that is sorted already, or nearly (each run in
    /// order after the one before), is not copied.
    pub fn into_sorted_by_key<K: Ord>(mut self, key: impl Fn(&T) -> K) -> Self {
        let n = self.len;
        let runs: Vec<std::ops::Range<usize>> = (0..n)
            .step_by(SORT_RUN)
            .map(|s| s..(s + SORT_RUN).min(n))
            .collect();
        for r in &runs {
            self[r.clone()].sort_unstable_by_key(&key);
            self.release_range(r.clone());
        }
        if runs
            .windows(2)
            .all(|w| key(&self[w[0].end - 1]) <= key(&self[w[1].start]))
        {
            return self;
        }
        // A k-way merge: each run read in order, the result written in
        // order, both given back as they go.
        let mut next: Vec<usize> = runs.iter().map(|r| r.start).collect();
        let mut heads: BinaryHeap<Reverse<(K, usize)>> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| Reverse((key(&self[r.start]), i)))
            .collect();
        let mut out = SpillVec::new();
        while let Some(Reverse((_, i))) = heads.pop() {
            out.push(self[next[i]]);
            next[i] += 1;
            if next[i] < runs[i].end {
                heads.push(Reverse((key(&self[next[i]]), i)));
            }
            if out.len() % (RELEASE_STEP / size_of::<T>().max(1)) == 0 {
                self.release();
            }
        }
        out
    }

    /// Brings a spilled array back into memory.
    fn unspill(&mut self) {
        let vals = self.to_vec();
        self.store = Store::Mem(vals);
        self.recount();
    }

    /// The values as bytes.
    fn bytes(&self) -> &[u8] {
        let vals: &[T] = self;
        // SAFETY: plain values have no padding: all their bytes are
        // initialized, and any u8 is valid.
        unsafe {
            std::slice::from_raw_parts(vals.as_ptr().cast::<u8>(), std::mem::size_of_val(vals))
        }
    }
}

/// A shared mapping of a new unlinked temporary file of `len` bytes.
fn temp_map(len: usize) -> Option<(File, memmap2::MmapMut)> {
    let f = tempfile::tempfile().ok()?;
    f.set_len(len as u64).ok()?;
    // SAFETY: the file is unlinked and only this process has it open:
    // nothing else truncates or writes it while it is mapped.
    let map = unsafe { memmap2::MmapMut::map_mut(&f) }.ok()?;
    Some((f, map))
}

impl<T: Plain> Drop for SpillVec<T> {
    fn drop(&mut self) {
        IN_MEMORY.fetch_sub(self.counted, Ordering::Relaxed);
    }
}

impl<T: Plain> Deref for SpillVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.store {
            Store::Mem(v) => v,
            // SAFETY: the first `len` values of the map were written by
            // `push` (plain values: their bytes read back as them) and lie
            // in the map (`len <= cap`); the map is page-aligned.
            Store::File { map, .. } => unsafe {
                std::slice::from_raw_parts(map.as_ptr().cast::<T>(), self.len)
            },
        }
    }
}

impl<T: Plain> DerefMut for SpillVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let len = self.len;
        match &mut self.store {
            Store::Mem(v) => v,
            // SAFETY: as for Deref, with the unique borrow of `self`.
            Store::File { map, .. } => unsafe {
                std::slice::from_raw_parts_mut(map.as_mut_ptr().cast::<T>(), len)
            },
        }
    }
}

impl<T: Plain> FromIterator<T> for SpillVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut s = Self::new();
        for v in iter {
            s.push(v);
        }
        s
    }
}

impl<T: Plain> From<Vec<T>> for SpillVec<T> {
    fn from(v: Vec<T>) -> Self {
        v.into_iter().collect()
    }
}

impl<T: Plain + PartialEq> PartialEq for SpillVec<T> {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_the_move_into_the_file_growth_and_release() {
        let n = 3 * SPILL_BYTES / 8 + 12_345;
        let mut v: SpillVec<u64> = SpillVec::new();
        for i in 0..n as u64 {
            v.push(i * 3 + 1);
            if i == 10 {
                assert!(!v.spilled());
            }
        }
        assert!(v.spilled());
        assert_eq!(v.len(), n);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3 + 1));
        // Writes through the slice stay after the pages are given back.
        v[7] = 99;
        v[n - 1] = 98;
        v.release();
        assert_eq!((v[6], v[7], v[8], v[n - 1]), (19, 99, 25, 98));
        let c = v.clone();
        assert!(c == v && c.spilled());
    }

    #[test]
    fn sorts_in_runs_and_merges_when_the_runs_overlap() {
        let n = 3 * SORT_RUN + 1234;
        // Overlapping runs (a merge), nearly sorted ones (no merge), and
        // equal keys (the second part breaks the tie).
        let shapes: [&dyn Fn(u64) -> u64; 3] =
            [&|i| (i * 7919) % 100_003, &|i| i + (i % 3), &|_| 5];
        for f in shapes {
            let v: SpillVec<u64> = (0..n as u64).map(|i| (f(i) << 24) | i).collect();
            let mut want = v.to_vec();
            want.sort_unstable();
            let got = v.into_sorted_by_key(|&x| (x >> 24, x & 0xff_ffff));
            assert!(got[..] == want[..]);
        }
    }

    #[test]
    fn a_small_array_stays_in_memory() {
        let v = SpillVec::filled(7u32, 1000);
        assert!(!v.spilled());
        assert_eq!(&v[..3], &[7, 7, 7]);
        assert_eq!(SpillVec::<u16>::new().len(), 0);
        let from: SpillVec<u8> = vec![1, 2, 3].into();
        assert_eq!(&from[..], &[1, 2, 3]);
    }
}
