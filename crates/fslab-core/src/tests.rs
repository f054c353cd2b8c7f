//! Cross-module tests: models driven through replay. Golden values pin timings so a
//! change to a model's physics shows up as a failing test, to be re-pinned on purpose.

use crate::models::{build, DeviceModel};
use crate::params::{Params, Value};
use crate::replay::{replay, Mode, Summary};
use crate::synthetic::{generate, SyntheticSpec};

pub fn params(pairs: &[(&str, Value)]) -> Params {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn n(v: f64) -> Value {
    Value::Num(v)
}
fn t(v: &str) -> Value {
    Value::Text(v.into())
}

fn run(p: &Params, spec: SyntheticSpec, qd: u32) -> (Summary, Box<dyn DeviceModel>) {
    let mut m = build(p).unwrap();
    m.precondition();
    m.reset_counters();
    let reqs = generate(&spec).unwrap();
    let out = replay(m.as_mut(), &reqs, Mode::Closed { queue_depth: qd }).unwrap();
    (out.summary(), m)
}

fn ssd() -> Params {
    params(&[("kind", t("ssd")), ("capacity", n((4u64 << 30) as f64))])
}

#[test]
fn hdd_random_read_qd1() {
    let p = params(&[("kind", t("hdd"))]);
    let spec = SyntheticSpec { rw: "randread".into(), count: 3000, span: 500_107_862_016 / 4096 * 4096, ..Default::default() };
    let (s, _) = run(&p, spec, 1);
    eprintln!("hdd randread qd1: {:.1} IOPS, mean {:.0} us", s.iops, s.latency_mean_ns / 1e3);
    assert!((74.0..=80.0).contains(&s.iops), "{}", s.iops);
}

#[test]
fn hdd_sequential_read_is_media_rate() {
    let p = params(&[("kind", t("hdd"))]);
    let spec = SyntheticSpec { rw: "read".into(), bs: 128 << 10, count: 2000, span: 1 << 30, ..Default::default() };
    let (s, _) = run(&p, spec, 1);
    eprintln!("hdd seq read qd1: {:.1} MB/s", s.mb_per_s);
    assert!(s.mb_per_s > 150.0 && s.mb_per_s < 200.0, "{}", s.mb_per_s);
}

#[test]
fn ssd_calibration() {
    let seqr = run(&ssd(), SyntheticSpec { rw: "read".into(), bs: 128 << 10, count: 20000, span: 4 << 30, ..Default::default() }, 32).0;
    let seqw = run(&ssd(), SyntheticSpec { rw: "write".into(), bs: 128 << 10, count: 20000, span: 4 << 30, ..Default::default() }, 32).0;
    let rr = run(&ssd(), SyntheticSpec { rw: "randread".into(), count: 200000, span: 4 << 30, ..Default::default() }, 32).0;
    let rr1 = run(&ssd(), SyntheticSpec { rw: "randread".into(), count: 20000, span: 4 << 30, ..Default::default() }, 1).0;
    eprintln!(
        "ssd seq read {:.0} MB/s, seq write {:.0} MB/s, rand read qd32 {:.0} IOPS, qd1 {:.0} IOPS",
        seqr.mb_per_s, seqw.mb_per_s, rr.iops, rr1.iops
    );
    assert!((520.0..=560.0).contains(&seqr.mb_per_s));
    assert!((495.0..=545.0).contains(&seqw.mb_per_s));
    assert!((90e3..=105e3).contains(&rr.iops));
}

#[test]
fn raid5_member_io_counts() {
    let mut p = params(&[
        ("kind", t("raid")),
        ("level", n(5.0)),
        ("members", n(8.0)),
        ("chunk_bytes", n(524288.0)),
        ("member.kind", t("ssd")),
        ("member.capacity", n((1u64 << 30) as f64)),
        ("member.over_provisioning", n(0.25)),
    ]);
    p.insert("member.precondition".into(), t("none"));
    let (_, m) = run(&p, SyntheticSpec { rw: "randwrite".into(), count: 1000, span: 7 << 30, ..Default::default() }, 4);
    let c = m.counters();
    assert_eq!(c["member_reads"] + c["member_writes"], 4000);
    let stripe = 7 * 524288;
    let (_, m) = run(&p, SyntheticSpec { rw: "write".into(), bs: stripe, count: 100, span: 7 << 30, ..Default::default() }, 1);
    let c = m.counters();
    assert_eq!(c["member_reads"], 0);
    assert_eq!(c["member_writes"], 800);
}

#[test]
fn deterministic() {
    let spec = SyntheticSpec { rw: "randrw".into(), count: 5000, span: 1 << 30, ..Default::default() };
    let a = run(&ssd(), spec.clone(), 8).0;
    let b = run(&ssd(), spec, 8).0;
    assert_eq!(a, b);
}

#[test]
fn raid5_controller_cache_merges_sequential_chunks_into_full_stripes() {
    let p = params(&[
        ("kind", t("raid")),
        ("level", n(5.0)),
        ("members", n(8.0)),
        ("chunk_bytes", n(524288.0)),
        ("cache_bytes", n((64u64 << 20) as f64)),
        ("member.kind", t("ssd")),
        ("member.capacity", n((1u64 << 30) as f64)),
        ("member.over_provisioning", n(0.25)),
    ]);
    let (_, m) = run(&p, SyntheticSpec { rw: "write".into(), bs: 512 << 10, count: 700, span: 7 << 30, ..Default::default() }, 4);
    let c = m.counters();
    assert_eq!(c["member_reads"], 0);
    assert_eq!(c["full_stripe_writes"], 100);
    assert_eq!(c["member_writes"], 800);
}

#[test]
fn a_sector_whose_byte_offset_overflows_is_a_bad_request_in_every_mode() {
    use crate::error::CoreError;
    use crate::request::{Op, Request};
    // 2^55 + 8 sectors: the byte offset wraps to 4096 in 64 bits, inside the capacity. As a
    // read and a write, second in the list and twentieth (the replay hints a model about a
    // request 16 and 8 places ahead, before that request is checked).
    let hdd = params(&[("kind", t("hdd"))]);
    for (p, mode) in [&ssd(), &hdd].into_iter().flat_map(|p| {
        [Mode::Closed { queue_depth: 1 }, Mode::Closed { queue_depth: 32 }, Mode::Open].map(|m| (p, m))
    }) {
        for (op, at) in [(Op::Read, 1), (Op::Write, 1), (Op::Read, 20), (Op::Write, 20)] {
            let mut m = build(p).unwrap();
            m.precondition();
            let mut reqs: Vec<Request> = (0..at as u64).map(|i| Request::new(0, Op::Write, 8 * i, 4096)).collect();
            reqs.push(Request::new(0, op, (1u64 << 55) + 8, 4096));
            match replay(m.as_mut(), &reqs, mode) {
                Err(CoreError::BadRequest { index, reason }) => {
                    assert_eq!(index, at);
                    assert!(reason.contains("beyond the model's capacity"), "{reason}");
                }
                Err(other) => panic!("another error: {other}"),
                Ok(_) => panic!("replayed a request past the device's end"),
            }
        }
    }
}

/// A model passed through with its prefetch hints dropped.
struct Unhinted(Box<dyn DeviceModel>);

impl DeviceModel for Unhinted {
    fn capacity_bytes(&self) -> u64 {
        self.0.capacity_bytes()
    }
    fn submit(&mut self, now: crate::request::Ns, tag: u64, req: &crate::request::Request, ctx: &mut dyn crate::engine::Ctx) {
        self.0.submit(now, tag, req, ctx)
    }
    fn completes_on_submit(&self) -> bool {
        self.0.completes_on_submit()
    }
    fn service(&mut self, now: crate::request::Ns, req: &crate::request::Request) -> crate::request::Ns {
        self.0.service(now, req)
    }
    fn wake(&mut self, now: crate::request::Ns, token: u64, ctx: &mut dyn crate::engine::Ctx) {
        self.0.wake(now, token, ctx)
    }
    fn reset_counters(&mut self) {
        self.0.reset_counters()
    }
    fn counters(&self) -> crate::models::Counters {
        self.0.counters()
    }
    fn time_by_mechanism(&self) -> crate::models::Mechanisms {
        self.0.time_by_mechanism()
    }
    fn facts(&self) -> crate::models::Facts {
        self.0.facts()
    }
    fn error(&self) -> Option<String> {
        self.0.error()
    }
}

#[test]
fn prefetch_hints_change_nothing_a_replay_reports() {
    // Garbage collection in steady state (random preconditioning, overwrites), reads
    // mixed in, closed and open loop: what the hints follow (the map entry, the unit it
    // names, its block) changes under them between the hint and the request.
    let p = params(&[
        ("kind", t("ssd")),
        ("capacity", n((256u64 << 20) as f64)),
        ("over_provisioning", n(0.25)),
        ("channels", n(2.0)),
        ("dies_per_channel", n(2.0)),
        ("precondition", t("random")),
        ("precondition_passes", n(2.0)),
    ]);
    for (rw, mode) in [
        ("randwrite", Mode::Closed { queue_depth: 32 }),
        ("randrw", Mode::Closed { queue_depth: 4 }),
        ("randwrite", Mode::Open),
    ] {
        let spec = SyntheticSpec { rw: rw.into(), count: 60_000, span: 256 << 20, rate_iops: 20_000.0, ..Default::default() };
        let reqs = generate(&spec).unwrap();
        let outcome = |hinted: bool| {
            let mut m = build(&p).unwrap();
            m.precondition();
            m.reset_counters();
            let mut m: Box<dyn DeviceModel> = if hinted { m } else { Box::new(Unhinted(m)) };
            replay(m.as_mut(), &reqs, mode).unwrap()
        };
        let (a, b) = (outcome(true), outcome(false));
        assert!(a.counters["erases"] > 0, "{rw}: no garbage collection");
        assert_eq!(a.latencies_ns, b.latencies_ns, "{rw} {mode:?}");
        assert_eq!((a.elapsed_ns, &a.counters, &a.facts), (b.elapsed_ns, &b.counters, &b.facts), "{rw} {mode:?}");
    }
}

#[test]
fn the_closed_loop_of_a_model_that_completes_on_submit_takes_an_empty_list() {
    let mut m = build(&ssd()).unwrap();
    assert!(m.completes_on_submit());
    let out = m.replay_closed_on_submit(&[], 32).unwrap();
    assert!(out.latencies_ns.is_empty());
    assert_eq!((out.elapsed_ns, out.read_bytes, out.write_bytes), (0, 0, 0));
}
