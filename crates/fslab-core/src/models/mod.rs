//! Device models that sit on top of the engine. Each implements `DeviceModel` and
//! describes itself in a `Kind` (its `kind` name, constructor and mechanisms); `KINDS` is
//! the one table of them, so adding a model touches its own file plus one row there.

pub mod fastdiv;
pub mod fixed;
pub mod floor;
pub mod ftl;
pub mod hdd;
pub mod raid;
pub mod ssd;

use std::collections::BTreeMap;

use crate::engine::Ctx;
use crate::error::{CoreError, Result};
use crate::params::{Params, Value};
use crate::request::{Ns, Request};

/// Named event counters of a model (`host_write_bytes`, `media_write_bytes`, `gc_runs`,
/// `erases`, `member_reads`, ...). Names carry their unit or say they are counts.
pub type Counters = BTreeMap<&'static str, u64>;
/// Named facts of a model that are not counts: the settings it actually simulated (after
/// rounding), derived ratios (`over_provisioning_simulated`, `write_amplification_steady`).
pub type Facts = BTreeMap<&'static str, f64>;
/// Where a model's time went: nanoseconds of work per mechanism (`seek`, `program`,
/// `parity_rmw_read`, ...). Each model documents on `time_by_mechanism` what the parts
/// are parts of; the parts of one model always add up to that whole, so a part divided
/// by the sum of all parts is its share.
pub type Mechanisms = BTreeMap<&'static str, u64>;

pub trait DeviceModel {
    /// Logical capacity the host may address, in bytes.
    fn capacity_bytes(&self) -> u64;
    /// A request arrives at `now`. The model reports its completion, now or later,
    /// through `ctx.complete(tag, at)`.
    fn submit(&mut self, now: Ns, tag: u64, req: &Request, ctx: &mut dyn Ctx);
    /// True for a model that knows each request's completion time as it is submitted
    /// and never asks to be woken: the replay then calls `service` instead of `submit`
    /// and queues the completion itself (no dynamic call back through `Ctx`).
    fn completes_on_submit(&self) -> bool {
        false
    }
    /// `submit` of a model that `completes_on_submit`: the completion time of `req`,
    /// arriving at `now`. Never called on other models.
    fn service(&mut self, _now: Ns, _req: &Request) -> Ns {
        unreachable!("service() is only called on a model that completes_on_submit()")
    }
    /// The closed-loop replay of a model that `completes_on_submit`, compiled for each
    /// model's own type: its hints are inlined into the loop and `service` is a direct
    /// call, not three dynamic calls per request (reads ~2% faster by alternating runs).
    /// Not to be overridden.
    fn replay_closed_on_submit(&mut self, reqs: &[Request], queue_depth: u32) -> Result<crate::replay::ReplayOutcome> {
        crate::replay::closed_on_submit(self, reqs, queue_depth)
    }
    /// A hint: `req` will be submitted soon. A model may start loading the state it will
    /// touch (a cache prefetch); it must not change anything observable.
    #[inline]
    fn prefetch(&self, _req: &Request) {}
    /// The second of two prefetch hints, given for a request `PREFETCH_NEAR` places ahead,
    /// whose first hint (`prefetch`, further ahead) has had time to arrive: the model may
    /// follow what that brought in (an SSD's map entry to the physical unit and block it
    /// names). It must not change anything observable.
    #[inline]
    fn prefetch_near(&self, _req: &Request) {}
    /// A wake-up the model asked for with `ctx.wake_at(at, token)`.
    fn wake(&mut self, _now: Ns, _token: u64, _ctx: &mut dyn Ctx) {}
    /// Bring the device to the state it would have after long use, without timing
    /// (e.g. an SSD's FTL filled and overwritten). Called before replay.
    fn precondition(&mut self) {}
    /// Zero the counters so they cover only what follows (after preconditioning).
    fn reset_counters(&mut self);
    fn counters(&self) -> Counters;
    /// Nanoseconds of work per mechanism since the last `reset_counters` (see
    /// `Mechanisms`). Empty for a model that does not account its time.
    fn time_by_mechanism(&self) -> Mechanisms {
        Mechanisms::new()
    }
    /// What the model assumed and derived (see `Facts`); read after replay.
    fn facts(&self) -> Facts {
        Facts::new()
    }
    /// Why the model could not honestly go on (e.g. an FTL plane out of free blocks), or
    /// None. Checked after replay; a model never panics on its input.
    fn error(&self) -> Option<String> {
        None
    }
}

/// A model constructor: the parameters in, the model (or why not) out.
pub type Constructor = fn(&Params) -> Result<Box<dyn DeviceModel>>;

/// One mechanism a model accounts its time to (a key of its `time_by_mechanism`) and the
/// cause it is part of, in words ("spends 61% of its predicted time in {cause}").
/// Mechanisms sharing a cause (a read-modify-write reads, then writes) add up under it.
#[derive(Clone, Copy, Debug)]
pub struct Mechanism {
    pub name: &'static str,
    pub cause: &'static str,
}

/// A model kind as the rest of fslab sees it: everything Python needs to name, describe and
/// explain a model lives here, beside the model, so a new model needs no Python edit.
#[derive(Clone, Copy)]
pub struct Kind {
    /// The `kind` parameter (a preset's `[model] kind`) that selects the model.
    pub name: &'static str,
    pub build: Constructor,
    /// Every key `time_by_mechanism` reports, in the order it is documented.
    pub mechanisms: &'static [Mechanism],
    /// What the mechanisms' parts add up to, in words.
    pub whole: &'static str,
    /// Listed to users (error messages, `model_kinds`); false for a model kept for tests,
    /// which a preset can still name.
    pub offered: bool,
}

/// Every model kind: the one table to extend when a model is added (its own file with its
/// `KIND`, plus one row here).
const KINDS: &[&Kind] = &[&hdd::KIND, &ssd::KIND, &raid::KIND, &fixed::KIND];

/// Every model kind, in table order (offered or not).
pub fn kinds() -> &'static [&'static Kind] {
    KINDS
}

/// The model kinds offered to users, in table order.
pub fn kind_names() -> Vec<&'static str> {
    KINDS.iter().filter(|k| k.offered).map(|k| k.name).collect()
}

/// Build a model from its parameters; `kind` selects the model.
pub fn build(params: &Params) -> Result<Box<dyn DeviceModel>> {
    let known = || kind_names().join(", ");
    let kind = match params.get("kind") {
        Some(Value::Text(k)) => k.as_str(),
        _ => return Err(CoreError::BadParam { name: "kind".into(), reason: format!("missing; use one of {}", known()) }),
    };
    match KINDS.iter().find(|k| k.name == kind) {
        Some(k) => (k.build)(params),
        None => Err(CoreError::UnknownKind(kind.into(), known())),
    }
}

/// Write amplification from counters: bytes programmed to media per byte the host wrote.
pub fn write_amplification(c: &Counters) -> f64 {
    let host = *c.get("host_write_bytes").unwrap_or(&0);
    let media = *c.get("media_write_bytes").unwrap_or(&0);
    if host == 0 {
        0.0
    } else {
        media as f64 / host as f64
    }
}

/// Ask the CPU to start loading the cache line holding `x` (no effect on results; a no-op
/// where no prefetch instruction is wired up).
#[inline(always)]
pub(crate) fn prefetch_read<T>(x: &T) {
    prefetch_at(x as *const T);
}

/// `prefetch_read` of the line at `p`, which need not point into anything (a buffer's
/// slot not yet written, or past its end): a prefetch only ever starts a load.
#[inline(always)]
pub(crate) fn prefetch_at<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no architectural effect, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod kind_tests {
    use super::*;

    #[test]
    fn unknown_kind_lists_the_table() {
        let mut p = Params::new();
        p.insert("kind".into(), Value::Text("tape".into()));
        match build(&p) {
            Err(CoreError::UnknownKind(kind, known)) => {
                assert_eq!(kind, "tape");
                assert_eq!(known, kind_names().join(", "));
                assert!(known.contains("hdd") && known.contains("ssd") && known.contains("raid"));
                assert!(!known.contains(fixed::KIND.name), "the test model is not offered");
            }
            Err(other) => panic!("unexpected error: {other}"),
            Ok(_) => panic!("a tape model was built"),
        }
    }
}
