//! Fault attribution: where a finding's fault address
//! lies among the allocations of the archive, at the point of the fault.
//!
//! The point is the failing event when the evidence names one, else the
//! last launch of the named kernel, else the end of the stream. There the
//! most specific live range holding the address wins (a region block over
//! its segment, which a note names), then a range freed and not
//! reallocated, then the nearest live range by distance (`past_end` /
//! `before_start`), then none. The archive is read again for this, as a
//! query of the summary pass; only a process archive on this host is read.

use std::path::Path;

use super::archive_summary::ArchiveFacts;
use super::evidence::{Evidence, NullArg};
use super::names::same_kernel;
use crate::archive::memory::map::Range;
use crate::archive::memory::watch::Surroundings;
use crate::archive::memory::{self, hex, source_name, Query};
use crate::finding::{ArgumentRef, FaultAllocation, Finding, Placement, PlacementState, Relation};

/// The first page of the address space: a null pointer plus a small offset.
pub(crate) const NULL_PAGE: u64 = 0x1000;

/// The numeric value of a `0x…` address.
pub(crate) fn address_value(a: &str) -> Option<u64> {
    u64::from_str_radix(a.strip_prefix("0x").or_else(|| a.strip_prefix("0X"))?, 16).ok()
}

fn placement_state(p: Option<&Placement>) -> PlacementState {
    match p {
        None => PlacementState::Unknown,
        Some(Placement::Off { .. }) => PlacementState::Off,
        Some(Placement::Active { fell_back, .. }) if *fell_back > 0 => PlacementState::FellBack,
        Some(Placement::Active { .. }) => PlacementState::Placed,
    }
}

/// The player's null argument a null-page fault follows: the named
/// kernel's last one, else the last one.
pub(crate) fn null_arg_behind<'a>(f: &Finding, e: &'a Evidence) -> Option<&'a NullArg> {
    let null_page = f
        .fault_address
        .as_deref()
        .and_then(address_value)
        .is_some_and(|a| a < NULL_PAGE);
    if !null_page {
        return None;
    }
    f.kernel_name
        .as_deref()
        .and_then(|k| e.null_args.iter().rev().find(|a| same_kernel(&a.kernel, k)))
        .or(e.null_args.last())
}

/// Sets `fault_allocation` (and its notes) when the finding has a fault
/// address and `archive` is a process archive on this host.
pub(crate) fn attribute(f: &mut Finding, e: &Evidence, archive: Option<&ArchiveFacts>) {
    let Some(fault) = f.fault_address.as_deref().and_then(address_value) else {
        return;
    };
    let Some(dir) = archive
        .filter(|a| a.kind == crate::archive::ArchiveKind::Process)
        .and_then(|a| a.path.as_deref())
        .map(Path::new)
        .filter(|d| d.join("events.bin").is_file())
    else {
        return;
    };
    let placement = placement_state(f.placement.as_ref());
    let null_arg = null_arg_behind(f, e);
    let (address, forced) = match null_arg.and_then(|n| Some((address_value(&n.address)?, n))) {
        Some((a, n)) => (
            a,
            Some(ArgumentRef {
                index: u16::try_from(n.arg).unwrap_or(u16::MAX),
                kernel: n.kernel.clone(),
            }),
        ),
        None => (fault, None),
    };
    let q = Query {
        at: f.failing_event_seq,
        address: Some(address),
        kernel: f.kernel_name.clone(),
    };
    let (_, watch) = match memory::query(dir, &q) {
        Ok(r) => r,
        Err(err) => {
            f.add_note(format!(
                "fault attribution: cannot read the archive: {err:#}"
            ));
            return;
        }
    };
    let point = match (f.failing_event_seq, &f.kernel_name) {
        (Some(_), _) => watch.at_event,
        (None, Some(_)) => watch.at_kernel.or(watch.at_end),
        (None, None) => watch.at_end,
    };
    let Some(point) = point else {
        return;
    };
    let mut a = FaultAllocation {
        address: hex(address),
        relation: Relation::None,
        api: None,
        base: None,
        size: None,
        offset: None,
        alloc_seq: None,
        free_seq: None,
        argument: None,
        placement,
    };
    let chosen = if placement == PlacementState::Off {
        f.add_note("fault attribution: placement was off in the replay, so the fault address is a replay address, not a capture address; no relation to the archive's allocations is asserted.");
        None
    } else {
        relate(&point, address, &mut a)
    };
    if let Some(r) = &chosen {
        a.api = Some(source_name(r.source));
        a.base = Some(hex(r.base));
        a.size = Some(r.size);
        a.alloc_seq = r.alloc_seq;
        a.free_seq = r.freed.and_then(|d| d.seq);
        if a.relation == Relation::Inside {
            if let Some(outer) = point.holding.get(1) {
                f.add_note(format!(
                    "fault attribution: the {} at {} lies inside the {}-byte {} at {}{}.",
                    source_name(r.source),
                    hex(r.base),
                    outer.size,
                    source_name(outer.source),
                    hex(outer.base),
                    outer
                        .alloc_seq
                        .map_or(String::new(), |s| format!(" (seq {s})"))
                ));
            }
        }
    }
    a.argument = forced
        .clone()
        .or_else(|| argument(&point, address, chosen.as_ref()));
    if placement == PlacementState::FellBack {
        f.add_note("fault attribution is by capture address: some allocations did not land at their recorded address in the replay, so the fault address may not be where the capture had it.");
    }
    if let (Some(n), Some(_)) = (null_arg, &forced) {
        f.add_note(format!(
            "fault attribution: the fault is in the null page after hrr-playback passed null for '{}' arg[{}], so that argument's recorded pointer {} is attributed.",
            n.kernel, n.arg, n.address
        ));
    }
    f.fault_allocation = Some(a);
}

/// The relation of `a` to the ranges around it, by precedence; the range
/// it is relative to.
fn relate(p: &Surroundings, a: u64, out: &mut FaultAllocation) -> Option<Range> {
    if let Some(r) = p.holding.first() {
        out.relation = Relation::Inside;
        out.offset = Some(a - r.base);
        return Some(*r);
    }
    if let Some(r) = p.freed {
        out.relation = Relation::Freed;
        out.offset = Some(a - r.base);
        return Some(r);
    }
    let past = p.below.map(|r| (a - r.end(), r));
    let before = p.above.map(|r| (r.base - a, r));
    let (relation, (offset, r)) = match (past, before) {
        (Some(x), Some(y)) if y.0 < x.0 => (Relation::BeforeStart, y),
        (Some(x), _) => (Relation::PastEnd, x),
        (None, Some(y)) => (Relation::BeforeStart, y),
        (None, None) => return None,
    };
    out.relation = relation;
    out.offset = Some(offset);
    Some(r)
}

/// The argument of the launch at the point whose pointer lies in `range`,
/// else the one nearest `a`.
fn argument(p: &Surroundings, a: u64, range: Option<&Range>) -> Option<ArgumentRef> {
    let (kernel, ptrs) = p.launch.as_ref()?;
    let inside = range.and_then(|r| ptrs.iter().find(|x| r.contains(x.address)));
    let pick = inside.or_else(|| ptrs.iter().min_by_key(|x| x.address.abs_diff(a)))?;
    Some(ArgumentRef {
        index: pick.arg,
        kernel: kernel.clone(),
    })
}
