//! Zero-filled tables of plain slots for the fused paths' counting tables
//! ([`super::fused::WordMap`]): a large one is mapped apart from the allocator and advised
//! for transparent huge pages, a small one is an ordinary `Vec`.
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! Why: word count's look-ups land at random in tables of 1-2 MiB per task (one slot read a
//! word), and on a virtual machine the page walk of a 4 KiB page missing from the TLB is
//! dear (two levels of tables). A 2 MiB page covers a whole table. The allocator's own memory
//! stays without huge pages (mimalloc's `allow_thp` 0, chosen for the memory of many tiny
//! tasks, see [`crate::configure_allocator`]): only these mappings are advised, and on a
//! kernel that leaves the process's huge pages disabled even where advised they are ordinary
//! pages, the table working the same. A fresh anonymous mapping is zero-filled, which is
//! the tables' empty state, so a new table costs no fill.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// A slot type whose all-zero bytes are a valid value (its empty state).
///
/// # Safety
/// Every field must be an integer (or an aggregate of integers): all-zero bytes must be a
/// valid value and the type must have no drop glue.
pub(crate) unsafe trait ZeroSlot: Copy + Default {}

// SAFETY: an integer.
unsafe impl ZeroSlot for u32 {}

/// The size of a transparent huge page on x86-64 and arm64 with 4 KiB base pages.
const HUGE_PAGE: usize = 2 << 20;

/// Tables of at least this many bytes are mapped apart (rounded up to [`HUGE_PAGE`]); a
/// smaller one would waste most of its huge page.
pub(crate) const MAPPED_FROM: usize = 1 << 20;

/// `len` zeroed slots of `T`.
pub(crate) struct Table<T: ZeroSlot> {
    repr: Repr<T>,
}

enum Repr<T> {
    Heap(Vec<T>),
    /// `len` slots at `ptr`, which starts a mapping of `map_len` bytes the table owns.
    Mapped {
        ptr: NonNull<T>,
        len: usize,
        map_len: usize,
    },
}

// SAFETY: the mapping is owned by the table alone (as a Vec owns its buffer).
unsafe impl<T: ZeroSlot + Send> Send for Table<T> {}
// SAFETY: shared access only reads the slots.
unsafe impl<T: ZeroSlot + Sync> Sync for Table<T> {}

impl<T: ZeroSlot> Table<T> {
    /// `len` empty (zeroed) slots.
    pub(crate) fn zeroed(len: usize) -> Table<T> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        if bytes >= MAPPED_FROM {
            if let Some(repr) = map_zeroed(len, bytes) {
                return Table { repr };
            }
        }
        Table {
            repr: Repr::Heap(vec![T::default(); len]),
        }
    }

    /// Whether the slots are in a mapping of their own (advised for huge pages).
    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.repr, Repr::Mapped { .. })
    }
}

/// A mapping of `bytes` rounded up to whole huge pages, starting on a huge page boundary
/// (so that the kernel can back it with them), advised `MADV_HUGEPAGE`. `None` when the
/// mapping fails (the caller uses the heap).
#[cfg(target_os = "linux")]
fn map_zeroed<T>(len: usize, bytes: usize) -> Option<Repr<T>> {
    let map_len = bytes.checked_next_multiple_of(HUGE_PAGE)?;
    // Map a huge page more than needed and unmap the unaligned head and the tail.
    let over = map_len.checked_add(HUGE_PAGE)?;
    // SAFETY: a new private anonymous mapping at an address of the kernel's choice; nothing
    // else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let head = (base as usize).next_multiple_of(HUGE_PAGE) - base as usize;
    let start = base.cast::<u8>().wrapping_add(head);
    let tail = over - head - map_len;
    // SAFETY: both ranges lie inside the mapping just made and outside [start, start +
    // map_len); unmapping them leaves that range mapped. The advice only changes how the
    // kernel backs the range (it fails harmlessly where huge pages are unavailable).
    unsafe {
        if head > 0 {
            libc::munmap(base, head);
        }
        if tail > 0 {
            libc::munmap(start.wrapping_add(map_len).cast(), tail);
        }
        libc::madvise(start.cast(), map_len, libc::MADV_HUGEPAGE);
    }
    Some(Repr::Mapped {
        ptr: NonNull::new(start.cast::<T>())?,
        len,
        map_len,
    })
}

#[cfg(not(target_os = "linux"))]
fn map_zeroed<T>(_len: usize, _bytes: usize) -> Option<Repr<T>> {
    None
}

impl<T: ZeroSlot> Drop for Table<T> {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Repr::Mapped { ptr, map_len, .. } = self.repr {
            // SAFETY: the table's own mapping, not used after this.
            unsafe {
                libc::munmap(ptr.as_ptr().cast(), map_len);
            }
        }
    }
}

impl<T: ZeroSlot> Deref for Table<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.repr {
            Repr::Heap(v) => v,
            // SAFETY: `len` slots of `T` in the table's mapping, zero-filled by the kernel
            // (a valid `T`, ZeroSlot) or written through `deref_mut`; aligned (a page boundary).
            Repr::Mapped { ptr, len, .. } => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), *len) },
        }
    }
}

impl<T: ZeroSlot> DerefMut for Table<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.repr {
            Repr::Heap(v) => v,
            // SAFETY: as in `deref`, and `&mut self` makes the access unique.
            Repr::Mapped { ptr, len, .. } => unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), *len) },
        }
    }
}

impl<T: ZeroSlot> Clone for Table<T> {
    fn clone(&self) -> Table<T> {
        let mut t = Table::zeroed(self.len());
        t.copy_from_slice(self);
        t
    }
}

impl<T: ZeroSlot> std::fmt::Debug for Table<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("len", &self.len())
            .field("mapped", &matches!(self.repr, Repr::Mapped { .. }))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_table_is_on_the_heap_and_zeroed() {
        let t: Table<u32> = Table::zeroed(1000);
        assert!(!t.is_mapped());
        assert_eq!(t.len(), 1000);
        assert!(t.iter().all(|&v| v == 0));
    }

    #[test]
    fn a_large_table_is_mapped_zeroed_and_writable_to_its_end() {
        let len = MAPPED_FROM / 4 + 3;
        let mut t: Table<u32> = Table::zeroed(len);
        assert!(t.is_mapped());
        assert_eq!(t.len(), len);
        assert!(t.iter().all(|&v| v == 0));
        assert_eq!(t.as_ptr() as usize % HUGE_PAGE, 0);
        t[0] = 7;
        t[len - 1] = 9;
        let c = t.clone();
        drop(t);
        assert_eq!((c[0], c[len - 1], c[1]), (7, 9, 0));
    }
}
