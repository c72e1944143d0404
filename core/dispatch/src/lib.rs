//! Run a kernel compiled for the best x86-64 level the CPU has, chosen at run time.
//!
//! `switchml-core` forbids `unsafe`, and calling a `#[target_feature]` function takes
//! `unsafe` (the caller promises that the CPU has the features). This crate is that
//! promise, kept once: [`dispatch`] checks the CPU (CPUID, cached; `no_std`) and runs the
//! closure inside a function compiled with AVX2 enabled, into which the closure and the
//! `#[inline(always)]` kernels it calls are inlined, so that LLVM vectorizes them eight
//! f32 wide with `vpshufb` byte swaps. Elsewhere, and on CPUs without AVX2, it runs the
//! closure as it is, at the target's baseline (SSE2, NEON, Cortex-M). Both run the same
//! source, so they compute the same bits.
//!
//! The workspace is built for the baseline; nothing needs `-C target-cpu`.

#![no_std]
#![deny(unsafe_code)]

#[cfg(target_arch = "x86_64")]
cpufeatures::new!(avx2, "avx2");

/// Run `kernel` compiled for AVX2 if the CPU has it, else as it is.
///
/// Mark the closure `#[inline(always)]`, and the functions it calls too: only code
/// inlined into the AVX2 function is compiled for AVX2.
#[inline]
pub fn dispatch<R>(kernel: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if avx2::get() {
        // SAFETY: the CPU has AVX2 (and the OS saves the YMM registers), which is all that
        // `with_avx2` is compiled for.
        #[allow(unsafe_code)]
        return unsafe { with_avx2(kernel) };
    }
    kernel()
}

/// Run `kernel` with AVX2 enabled; the caller has checked that the CPU has it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
unsafe fn with_avx2<R>(kernel: impl FnOnce() -> R) -> R {
    kernel()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_the_kernel_once() {
        let mut runs = 0;
        assert_eq!(
            dispatch(|| {
                runs += 1;
                7
            }),
            7
        );
        assert_eq!(runs, 1);
    }
}
