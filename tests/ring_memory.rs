//! What a ring costs per slot, measured by a counting allocator that counts only the
//! thread doing the measuring (the test harness allocates on its own threads meanwhile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use uidgen::CachedUidGenerator;

struct Counting;

thread_local! {
    // Const-initialised with no destructor: reading it never allocates, so it is safe
    // to touch from inside the allocator.
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    static NET_BYTES: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    if MEASURING.with(Cell::get) {
        NET_BYTES.with(|n| n.set(n.get() + delta));
    }
}

// SAFETY: every method forwards to `System` with the caller's own arguments, so
// `System`'s guarantees carry over; the counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: `ptr` was allocated by `alloc` above (i.e. by `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the bytes this thread allocated and did not free.
fn measure<T>(f: impl FnOnce() -> T) -> (T, isize) {
    NET_BYTES.with(|n| n.set(0));
    MEASURING.with(|m| m.set(true));
    let value = f();
    MEASURING.with(|m| m.set(false));
    (value, NET_BYTES.with(Cell::get))
}

#[test]
fn a_ring_costs_8_bytes_a_slot() {
    for capacity in [1 << 10, 1 << 16, 1 << 20] {
        let (generator, allocated) = measure(|| {
            CachedUidGenerator::builder()
                .ring_capacity(capacity)
                .build()
                .unwrap()
        });
        assert_eq!(generator.capacity(), capacity);
        // The flag lives in the ID's sign bit: one 8-byte word a slot, plus counters,
        // thread handle, channel and bookkeeping (< 64 KiB).
        assert!(
            (allocated as usize) >= capacity * 8 && (allocated as usize) < capacity * 8 + 64 * 1024,
            "{capacity} slots: {allocated} bytes"
        );
        let ((), freed) = measure(|| drop(generator));
        assert!(
            -freed >= (capacity * 8) as isize,
            "{capacity} slots: only {} bytes freed on drop",
            -freed
        );
    }
}

#[test]
fn a_default_generator_holds_half_a_mebibyte_of_ring() {
    let (generator, allocated) = measure(|| CachedUidGenerator::builder().build().unwrap());
    assert_eq!(generator.capacity(), 1 << 16);
    // 65,536 slots of 8 bytes, plus thread handle, channel and bookkeeping (< 64 KiB).
    assert!(
        (allocated as usize) < generator.capacity() * 8 + 64 * 1024,
        "{allocated} bytes for {} slots",
        generator.capacity()
    );
    eprintln!(
        "default generator: {allocated} bytes allocated by build() for {} slots",
        generator.capacity()
    );
}
