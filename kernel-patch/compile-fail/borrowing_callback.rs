// SPDX-License-Identifier: GPL-2.0
// expect: E0478
//! The misuse example of `kernel::unwind`: a callback that borrows a local.
//! Leaking its `UnwindWork` (safe) would leave the borrow dangling, so
//! `UnwindCallback` requires `'static` and this must not compile.

use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::unwind::{Cookie, UnwindCallback, UnwindWork, UserStack};

struct Borrowing<'a> {
    frames: &'a Atomic<usize>,
}

impl UnwindCallback for Borrowing<'_> {
    fn unwound(&self, _cookie: Cookie, stack: UserStack<'_>) {
        self.frames.add(stack.len(), Relaxed);
    }
}

pub fn leak_a_borrow() -> Result {
    let frames = Atomic::new(0);
    let work = KBox::pin_init(UnwindWork::new(Borrowing { frames: &frames }), GFP_KERNEL)?;
    core::mem::forget(work);
    Ok(())
}
