//! Ground truth for the unwinder, Rust release build with threads (see
//! truth.c for the protocol).
use std::ffi::c_void;

extern "C" {
    fn backtrace(buf: *mut *mut c_void, size: i32) -> i32;
    fn write(fd: i32, buf: *const c_void, n: usize) -> isize;
}

#[inline(never)]
fn mark() {
    let mut chain = [std::ptr::null_mut::<c_void>(); 256];
    // SAFETY: the buffer holds 256 pointers.
    let n = unsafe { backtrace(chain.as_mut_ptr(), 256) };
    // SAFETY: writes n pointers' bytes from the buffer to fd -1 (EBADF).
    unsafe { write(-1, chain.as_ptr().cast(), 8 * n as usize) };
}

#[inline(never)]
fn level(d: u32, acc: &mut Vec<u32>) {
    if d == 0 {
        mark();
    } else {
        level(d - 1, acc);
    }
    acc.push(d);
}

fn main() {
    let threads: Vec<_> = (0..3)
        .map(|i| {
            std::thread::spawn(move || {
                let mut acc = Vec::new();
                for _ in 0..2 {
                    level(10 + i, &mut acc);
                }
                acc.len()
            })
        })
        .collect();
    let n: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    std::process::exit(if n == 0 { 1 } else { 0 });
}
