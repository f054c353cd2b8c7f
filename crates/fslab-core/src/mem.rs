//! Memory hints for the large buffers a pass fills once (trace summaries' values, replay
//! latencies): no effect on results.

/// Ask for transparent huge pages on the whole 2 MiB pages inside `buf` (not yet
/// touched memory; only a hint: nothing changes where the kernel declines).
pub fn huge_pages<T>(buf: &mut [T]) {
    const HUGE: usize = 2 << 20;
    let start = buf.as_mut_ptr() as usize;
    let end = start + std::mem::size_of_val(buf);
    let (a, b) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
    if b > a {
        // SAFETY: [a, b) lies inside `buf`'s allocation; MADV_HUGEPAGE changes no contents.
        unsafe {
            libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE);
        }
    }
}
