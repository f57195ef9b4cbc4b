//! The walk: CFI steps over the snapshot, then the kernel's frame-pointer
//! chain where the snapshot ends.
//!
//! # The rule for joining the kernel's chain
//!
//! The kernel's walk of the same stack gives `k[0] = ip`, then
//! `k[i + 1] = [b[i] + 8]` with `b[0] = bp` and `b[i + 1] = [b[i]]`. The
//! frame pointers `b[0..=m]` that the snapshot holds are computed here
//! too. When the CFI walk cannot go on at a frame whose rule says it has
//! a frame pointer set up (CFA = rbp + 16), or that has no CFI at all,
//! and whose rbp is `b[i]`, the frames `k[i + 1..]` are its callers: they
//! are appended as [`Via::Kernel`]. A frame without a frame pointer at
//! that point, or an rbp that is not on the chain, ends the stack there:
//! a missing frame is better than a wrong one.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};

use gimli::UnwindContext;

use super::module::Module;
use super::rule::{Fail, Regs, Rule, NREGS, RBP, RIP, RSP};
use super::{Mapping, Snapshot};

/// How a frame was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Via {
    /// The instruction pointer register (the innermost frame).
    Ip,
    /// The CFI of the caller's frame, over the snapshot.
    Cfi,
    /// The kernel's frame-pointer walk, past the end of the snapshot.
    Kernel,
}

impl Via {
    /// The name `--json` uses.
    pub fn name(self) -> &'static str {
        match self {
            Via::Ip => "ip",
            Via::Cfi => "cfi",
            Via::Kernel => "fp",
        }
    }
}

/// Why a stack ends where it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum End {
    /// The CFI says the last frame is the outermost one: the stack is
    /// complete.
    Complete,
    /// The kernel's chain was followed to its end.
    KernelChain,
    /// The snapshot ran out where the next frame's return address would
    /// be, and the kernel's chain could not take over.
    SnapshotExhausted,
    /// No CFI covers the last frame's address (or it is in no file), and
    /// the kernel's chain could not take over.
    NoUnwindInfo,
    /// The frame pointer points outside the stack, or a step went down
    /// the stack.
    BadFrame,
    /// [`MAX_FRAMES`] frames.
    TooDeep,
}

impl End {
    /// The reason as the reports print it (`None` for a complete stack).
    pub fn reason(self) -> Option<&'static str> {
        match self {
            End::Complete => None,
            End::KernelChain => Some("frame-pointer walk from here"),
            End::SnapshotExhausted => Some("stack snapshot exhausted"),
            End::NoUnwindInfo => Some("no unwind info for this address"),
            End::BadFrame => Some("frame pointer outside the stack"),
            End::TooDeep => Some("too deep"),
        }
    }
}

/// One frame of an unwound stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnwoundFrame {
    /// The address: the instruction pointer for the first frame (and for
    /// the frame a signal interrupted), a return address for the others.
    pub addr: u64,
    /// How it was found.
    pub via: Via,
    /// The address is exact (not a return address): look symbols up at
    /// `addr`, not `addr - 1`.
    pub exact: bool,
}

/// An unwound stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwound {
    /// Innermost first.
    pub frames: Vec<UnwoundFrame>,
    /// Why it ends.
    pub end: End,
    /// Index of the first frame the CFI walk did not find (where the
    /// stack stops being exact), and why the walk stopped there.
    pub cut: Option<(usize, End)>,
}

/// Most frames of one stack.
pub const MAX_FRAMES: usize = 1024;

/// A multiplicative hasher for the rule cache's integer keys.
#[derive(Default)]
struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
}

type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// The unwinder of one trace: the CFI of every file it met, and the rule
/// of every (file, address) it unwound through.
#[derive(Default)]
pub struct Unwinder {
    root: Option<PathBuf>,
    by_path: HashMap<String, u32>,
    modules: Vec<Option<Module>>,
    rules: IntMap<(u32, u64), Option<Rule>>,
    ctx: Option<Box<UnwindContext<usize>>>,
    /// The vDSO image of the traced kernel, when known.
    vdso: Option<Vec<u8>>,
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Unwinder({} files, {} rules)",
            self.modules.len(),
            self.rules.len()
        )
    }
}

/// A mapping met during one walk, with its file's index.
#[derive(Clone, Copy)]
struct Hit {
    base: u64,
    end: u64,
    module: Option<u32>,
}

impl Unwinder {
    /// An unwinder that looks files up under `root` (a sysroot, as
    /// `--symfs` gives) first, then at their plain path.
    pub fn new(root: Option<PathBuf>) -> Self {
        Unwinder {
            root,
            ..Default::default()
        }
    }

    /// Unwinds frames in `[vdso]` with `image`, the vDSO of the kernel
    /// the trace was recorded on (see [`crate::vdso`]).
    pub fn with_vdso(mut self, image: Vec<u8>) -> Self {
        self.vdso = Some(image);
        self
    }

    /// Unwinds one stack: `snap` is the kernel entry's snapshot, `kernel`
    /// the kernel's frame-pointer walk of the same stack (empty if there
    /// is none), `find` the mapping that holds an address in the task's
    /// process.
    pub fn unwind<'m>(
        &mut self,
        snap: &Snapshot<'_>,
        kernel: &[u64],
        mut find: impl FnMut(u64) -> Option<Mapping<'m>>,
    ) -> Unwound {
        let mut regs: Regs = [None; NREGS];
        regs[usize::from(RSP)] = Some(snap.sp);
        regs[usize::from(RBP)] = Some(snap.bp);
        regs[usize::from(RIP)] = Some(snap.ip);
        let mut frames = vec![UnwoundFrame {
            addr: snap.ip,
            via: Via::Ip,
            exact: true,
        }];
        let mut hits: Vec<Hit> = Vec::with_capacity(4);
        let mut exact = true;
        // Why the CFI walk stopped, and whether the kernel's chain may
        // take over there.
        let (end, join) = loop {
            if frames.len() >= MAX_FRAMES {
                break (End::TooDeep, false);
            }
            let ip = regs[usize::from(RIP)].unwrap_or(0);
            let look = if exact { ip } else { ip.wrapping_sub(1) };
            let rule = self.rule_for(look, &mut hits, &mut find);
            let Some(rule) = rule else {
                break (End::NoUnwindInfo, true);
            };
            let signal = rule.signal;
            let next = rule.apply(&regs, snap);
            let fp_frame = rule.is_frame_pointer_frame();
            match next {
                Ok(n) => {
                    let (sp, nsp) = (regs[usize::from(RSP)], n[usize::from(RSP)]);
                    let ra = n[usize::from(RIP)].unwrap_or(0);
                    if ra == 0 {
                        break (End::Complete, false);
                    }
                    if !signal && nsp <= sp {
                        break (End::BadFrame, false);
                    }
                    regs = n;
                    exact = signal;
                    frames.push(UnwoundFrame {
                        addr: ra,
                        via: Via::Cfi,
                        exact,
                    });
                }
                Err(Fail::Outermost) => break (End::Complete, false),
                Err(Fail::Outside) => break (End::SnapshotExhausted, fp_frame),
                Err(Fail::UnknownRegister | Fail::BadExpression) => {
                    break (End::NoUnwindInfo, false);
                }
            }
        };
        let end = if join {
            self.join_kernel(&regs, snap, kernel, &mut frames, &mut hits, &mut find, end)
        } else {
            end
        };
        let cut = match end {
            End::Complete => None,
            _ => {
                let first_fp = frames.iter().position(|f| f.via == Via::Kernel);
                Some((first_fp.unwrap_or(frames.len()), end))
            }
        };
        let end = if frames.last().map(|f| f.via) == Some(Via::Kernel) {
            End::KernelChain
        } else {
            end
        };
        Unwound { frames, end, cut }
    }

    /// [`Unwinder::unwind`] in one process whose file mappings are `maps`
    /// (sorted by start, as a [`ProcMap`](ustack_tracedata::ProcMap)
    /// holds them).
    pub fn unwind_in(
        &mut self,
        snap: &Snapshot<'_>,
        kernel: &[u64],
        maps: &[ustack_tracedata::LibMap],
    ) -> Unwound {
        self.unwind(snap, kernel, |a| {
            let i = maps.partition_point(|m| m.start <= a).checked_sub(1)?;
            let m = maps.get(i).filter(|m| a < m.end)?;
            Some(Mapping {
                base: m.start,
                end: m.end,
                path: &m.path,
            })
        })
    }

    /// The mapping that holds `a`: one the walk met already, else `find`'s
    /// (remembered, with its file's index).
    fn hit_for<'m>(
        &mut self,
        a: u64,
        hits: &mut Vec<Hit>,
        find: &mut impl FnMut(u64) -> Option<Mapping<'m>>,
    ) -> Option<Hit> {
        if let Some(h) = hits.iter().find(|h| a >= h.base && a < h.end) {
            return Some(*h);
        }
        let m = find(a)?;
        let h = Hit {
            base: m.base,
            end: m.end,
            module: self.module_index(m.path),
        };
        hits.push(h);
        Some(h)
    }

    /// The rule at `look`, through the walk's recent mappings and the
    /// cache.
    #[inline]
    fn rule_for<'m>(
        &mut self,
        look: u64,
        hits: &mut Vec<Hit>,
        find: &mut impl FnMut(u64) -> Option<Mapping<'m>>,
    ) -> Option<&Rule> {
        let hit = self.hit_for(look, hits, find)?;
        let module = hit.module?;
        let off = look - hit.base;
        if !self.rules.contains_key(&(module, off)) {
            let ctx = self.ctx.get_or_insert_with(Default::default);
            let rule = self.modules[module as usize]
                .as_ref()
                .and_then(|m| m.rule_at(m.vaddr(off), ctx));
            self.rules.insert((module, off), rule);
        }
        self.rules.get(&(module, off))?.as_ref()
    }

    fn module_index(&mut self, path: &str) -> Option<u32> {
        if let Some(&i) = self.by_path.get(path) {
            return Some(i);
        }
        let m = match path {
            "[vdso]" => Module::from_bytes(self.vdso.clone()?),
            p if p.starts_with('/') => Module::load(Path::new(path), self.root.as_deref()),
            _ => return None,
        };
        let i = u32::try_from(self.modules.len()).ok()?;
        self.modules.push(m);
        self.by_path.insert(path.to_string(), i);
        Some(i)
    }

    /// Appends the kernel's frames that follow the last frame, when its
    /// rbp is on the kernel's chain (see the module docs); returns how the
    /// stack ends. Each further kernel frame is taken only while the CFI
    /// of the frame before it says that frame has a frame pointer set up
    /// (or there is no CFI to ask): a frameless function on the chain
    /// means the kernel's next step used someone else's frame pointer.
    #[allow(clippy::too_many_arguments)]
    fn join_kernel<'m>(
        &mut self,
        regs: &Regs,
        snap: &Snapshot<'_>,
        kernel: &[u64],
        frames: &mut Vec<UnwoundFrame>,
        hits: &mut Vec<Hit>,
        find: &mut impl FnMut(u64) -> Option<Mapping<'m>>,
        otherwise: End,
    ) -> End {
        let Some(bp) = regs[usize::from(RBP)] else {
            return otherwise;
        };
        if kernel.first() != Some(&snap.ip) {
            return otherwise;
        }
        // b[0..]: the chain as far as the snapshot holds it; each step
        // must go up the stack.
        let mut b = snap.bp;
        let mut i = 0usize;
        while b != bp {
            match snap.read_u64(b) {
                Some(next) if next > b && next & 7 == 0 => {
                    // Where the snapshot holds [b + 8], the kernel must
                    // have read the same return address.
                    if let Some(ra) = snap.read_u64(b + 8) {
                        if kernel.get(i + 1) != Some(&ra) {
                            return otherwise;
                        }
                    }
                    b = next;
                    i += 1;
                }
                _ => return otherwise,
            }
        }
        if bp < snap.sp || bp & 7 != 0 {
            return End::BadFrame;
        }
        let from = i + 1;
        if from >= kernel.len() {
            return otherwise;
        }
        for &a in kernel[from..].iter().take_while(|&&a| a != 0) {
            if frames.len() >= MAX_FRAMES {
                return End::TooDeep;
            }
            // A frame must be in a mapping of the process at least.
            if self.hit_for(a, hits, find).is_none() {
                return End::KernelChain;
            }
            let last = frames.last().copied();
            if let Some(last) = last.filter(|f| f.via == Via::Kernel) {
                let look = if last.exact {
                    last.addr
                } else {
                    last.addr.wrapping_sub(1)
                };
                if let Some(rule) = self.rule_for(look, hits, find) {
                    if !rule.is_frame_pointer_frame() {
                        return End::KernelChain;
                    }
                }
            }
            frames.push(UnwoundFrame {
                addr: a,
                via: Via::Kernel,
                exact: false,
            });
        }
        End::KernelChain
    }
}
