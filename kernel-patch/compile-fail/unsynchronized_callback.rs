// SPDX-License-Identifier: GPL-2.0
// expect: E0277
//! Callbacks run on any CPU, in the task that went back to user space,
//! while other tasks may run the same callback: `UnwindCallback` requires
//! `Sync`, and a `Cell` counter must not compile.

use core::cell::Cell;
use kernel::prelude::*;
use kernel::unwind::{Cookie, UnwindCallback, UnwindWork, UserStack};

struct Unsynchronized {
    frames: Cell<usize>,
}

impl UnwindCallback for Unsynchronized {
    fn unwound(&self, _cookie: Cookie, stack: UserStack<'_>) {
        self.frames.set(self.frames.get() + stack.len());
    }
}

pub fn register() -> Result {
    let _work = KBox::pin_init(
        UnwindWork::new(Unsynchronized {
            frames: Cell::new(0),
        }),
        GFP_KERNEL,
    )?;
    Ok(())
}
