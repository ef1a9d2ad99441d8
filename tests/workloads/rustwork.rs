// SPDX-License-Identifier: GPL-2.0
//
// rustwork [SECONDS]: Rust names for the demangling tests (default 2 s).
//
// main -> rustwork::geo::relax and main -> rustwork::geo::deep::smooth, in
// rounds of 10 ms of wall time each, until SECONDS passed.
//
// GROUND TRUTH: about half of the process's samples have the innermost
// user frame rustwork::geo::relax and half rustwork::geo::deep::smooth.
// Built by Debian's rustc (1.63), whose default is the legacy mangling:
// _ZN8rustwork3geo5relax17h<16 hex digits>E. The demangled name drops the
// hash, as rustfilt does. Built a second time as rustwork-v0 with
// -C symbol-mangling-version=v0: _RNvNtCs<hash>_8rustwork3geo5relax, same
// demangled names. #[inline(never)] keeps each function its own
// frame; -C force-frame-pointers=yes makes the walk find them (Rust's std
// is built without frame pointers, so stacks may stop above main).
use std::time::{Duration, Instant};

mod geo {
    use std::time::{Duration, Instant};

    /// Spins until `d` has passed: an LCG step with an empty asm barrier,
    /// as the C workloads' BARRIER (black_box is newer than rustc 1.63).
    #[inline(always)]
    fn spin(d: Duration) -> u64 {
        let end = Instant::now() + d;
        let mut x: u64 = 1;
        loop {
            for _ in 0..20000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                unsafe { std::arch::asm!("/* {0} */", inout(reg) x) };
            }
            if Instant::now() >= end {
                return x;
            }
        }
    }

    #[inline(never)]
    pub fn relax(ms: u64) -> u64 {
        spin(Duration::from_millis(ms))
    }

    pub mod deep {
        #[inline(never)]
        pub fn smooth(ms: u64) -> u64 {
            super::spin(super::Duration::from_millis(ms))
        }
    }
}

fn main() {
    let secs: f64 = match std::env::args().nth(1) {
        None => 2.0,
        Some(s) => match s.parse::<f64>() {
            Ok(v) if v > 0.0 && v <= 365.0 * 86400.0 => v,
            _ => {
                eprintln!("usage: rustwork [SECONDS]");
                std::process::exit(2);
            }
        },
    };
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut sink: u64 = 0;
    while Instant::now() < end {
        sink = sink.wrapping_add(geo::relax(10));
        sink = sink.wrapping_add(geo::deep::smooth(10));
    }
    std::process::exit((sink == 42) as i32);
}
