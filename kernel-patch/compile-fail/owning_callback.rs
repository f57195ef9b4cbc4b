// SPDX-License-Identifier: GPL-2.0
// expect: ok
//! The control: the module documentation's example, a callback that owns
//! its atomic counter. It must compile with the same command, so that the
//! failures of the other cases are theirs and not the harness's.

use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::unwind::{Cookie, UnwindCallback, UnwindWork, UserStack};

struct Counter {
    frames: Atomic<usize>,
}

impl UnwindCallback for Counter {
    fn unwound(&self, _cookie: Cookie, stack: UserStack<'_>) {
        self.frames.add(stack.len(), Relaxed);
    }
}

pub fn register() -> Result {
    let work = KBox::pin_init(
        UnwindWork::new(Counter {
            frames: Atomic::new(0),
        }),
        GFP_KERNEL,
    )?;
    let _ = work.request();
    Ok(())
}
