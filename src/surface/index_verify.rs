//! The index checked against a full scan (`PI_SANDBOX_INDEX_VERIFY=1`, set by the tests):
//! a difference is a panic naming it.

use std::path::PathBuf;

use crate::policy::guard::Guard;
use crate::surface::scan::{scan_protected, Scan};

/// `PI_SANDBOX_INDEX_VERIFY=1` (the tests): every answer of the index is compared with a full
/// scan, and a difference is a panic naming it.
pub(crate) fn verify_requested() -> bool {
    std::env::var_os("PI_SANDBOX_INDEX_VERIFY").is_some_and(|v| v == "1")
}

/// A scan as a sorted list of lines, to compare two whatever their order.
pub(crate) fn comparable(s: &Scan) -> Vec<String> {
    let mut v: Vec<String> = s
        .protected
        .iter()
        .map(|f| format!("protected {f:?}"))
        .chain(s.audited.iter().map(|f| format!("audited {f:?}")))
        .chain(s.git_dirs.iter().map(|g| format!("git dir {g:?}")))
        .chain(s.second_names.iter().map(|f| format!("second name {f:?}")))
        .collect();
    v.sort();
    v.dedup();
    v
}

pub(crate) fn verify(scan: &Scan, guard: &Guard, roots: &[PathBuf]) {
    let full = scan_protected(guard, roots);
    let (a, b) = (comparable(scan), comparable(&full));
    if a != b {
        let only_index: Vec<_> = a.iter().filter(|x| !b.contains(x)).collect();
        let only_full: Vec<_> = b.iter().filter(|x| !a.contains(x)).collect();
        panic!("the index disagrees with a full scan: only in the index {only_index:?}; only in the full scan {only_full:?}");
    }
}
