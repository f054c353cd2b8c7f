//! Tests of `DeviceModel::time_by_mechanism`: each model's parts add up to the whole its
//! documentation names, and the mechanism a storage engineer expects dominates.

use crate::models::{build, Mechanisms};
use crate::params::{Params, Value};
use crate::replay::{replay, Mode, ReplayOutcome};
use crate::synthetic::{generate, SyntheticSpec};
use crate::tests::params;

fn n(v: f64) -> Value {
    Value::Num(v)
}
fn t(v: &str) -> Value {
    Value::Text(v.into())
}

fn run(p: &Params, spec: SyntheticSpec, qd: u32) -> ReplayOutcome {
    let mut m = build(p).unwrap();
    m.precondition();
    m.reset_counters();
    replay(m.as_mut(), &generate(&spec).unwrap(), Mode::Closed { queue_depth: qd }).unwrap()
}

fn total(m: &Mechanisms) -> u64 {
    m.values().sum()
}

fn share(m: &Mechanisms, name: &str) -> f64 {
    m[name] as f64 / total(m) as f64
}

fn raid5(members: f64, cache_bytes: f64) -> Params {
    params(&[
        ("kind", t("raid")),
        ("level", n(5.0)),
        ("members", n(members)),
        ("chunk_bytes", n(65536.0)),
        ("cache_bytes", n(cache_bytes)),
        ("member.kind", t("ssd")),
        ("member.capacity", n((1u64 << 30) as f64)),
        ("member.over_provisioning", n(0.25)),
        ("member.precondition", t("none")),
    ])
}

#[test]
fn raid5_random_small_writes_spend_their_time_in_read_modify_write() {
    let out = run(&raid5(8.0, 0.0), SyntheticSpec { rw: "randwrite".into(), count: 4000, span: 7 << 30, ..Default::default() }, 8);
    let m = &out.time_by_mechanism_ns;
    let rmw = share(m, "parity_rmw_read") + share(m, "parity_rmw_write");
    assert!(rmw > 0.99, "{m:?}");
    assert_eq!(m["full_stripe_write"], 0, "{m:?}");
    assert!(m["parity_rmw_read"] > 0 && m["parity_rmw_write"] > 0, "{m:?}");
}

#[test]
fn raid5_full_stripe_writes_read_nothing() {
    let stripe = 7 * 65536;
    let out = run(&raid5(8.0, 0.0), SyntheticSpec { rw: "write".into(), bs: stripe, count: 300, span: 7 << 30, ..Default::default() }, 4);
    let m = &out.time_by_mechanism_ns;
    assert_eq!(m["full_stripe_write"] + m["host_link"], total(m), "{m:?}");
    assert_eq!(m["parity_rmw_read"] + m["reconstruct_read"] + m["data_read"], 0, "{m:?}");
}

#[test]
fn raid_member_time_at_depth_one_is_the_host_latency() {
    // RAID0 at queue depth 1: each host read is one member read, so the member-I/O time
    // summed over causes is the host's latency summed over requests.
    let p = params(&[
        ("kind", t("raid")),
        ("level", n(0.0)),
        ("members", n(4.0)),
        ("chunk_bytes", n(65536.0)),
        ("member.kind", t("ssd")),
        ("member.capacity", n((1u64 << 30) as f64)),
        ("member.over_provisioning", n(0.25)),
    ]);
    let out = run(&p, SyntheticSpec { rw: "randread".into(), count: 2000, span: 4 << 30, ..Default::default() }, 1);
    let m = &out.time_by_mechanism_ns;
    assert_eq!(total(m), out.latencies_ns.iter().sum::<u64>());
    assert_eq!(m["data_read"] + m["host_link"], total(m));
    // The host link (the members' four 550 MB/s links together) moved every byte once.
    assert_eq!(m["host_link"], 2000 * (4096.0_f64 * 1000.0 / 2200.0).round() as u64);
}

fn hdd_without_cache() -> Params {
    params(&[("kind", t("hdd")), ("cache_bytes", n(0.0)), ("readahead_bytes", n(0.0))])
}

#[test]
fn hdd_parts_add_up_to_the_latency_of_uncached_requests_at_depth_one() {
    // No cache, one request at a time: the arm starts on each request as it arrives, so
    // a read's latency is its command, seek, rotation and transfer (with the link after
    // it). A write's data crosses the link while the arm positions: its link time is work
    // beside the latency, not in it.
    let link_4k = (4096.0_f64 * 1000.0 / 550.0).round() as u64;
    for (rw, overlapped) in [("randread", 0), ("randwrite", link_4k), ("read", 0), ("write", link_4k)] {
        let spec = SyntheticSpec { rw: rw.into(), count: 500, span: 400 << 30, ..Default::default() };
        let out = run(&hdd_without_cache(), spec, 1);
        let m = &out.time_by_mechanism_ns;
        assert_eq!(total(m), out.latencies_ns.iter().sum::<u64>() + 500 * overlapped, "{rw}: {m:?}");
        assert_eq!(m["cache"], 0, "{rw}: {m:?}");
    }
}

#[test]
fn hdd_random_small_reads_position_large_sequential_reads_transfer() {
    let p = params(&[("kind", t("hdd"))]);
    let random = run(&p, SyntheticSpec { rw: "randread".into(), count: 2000, span: 400 << 30, ..Default::default() }, 1);
    let m = &random.time_by_mechanism_ns;
    assert!(share(m, "seek") + share(m, "rotation") > 0.9, "{m:?}");
    let seq = run(&p, SyntheticSpec { rw: "read".into(), bs: 1 << 20, count: 500, span: 1 << 30, ..Default::default() }, 1);
    let m = &seq.time_by_mechanism_ns;
    let (most, _) = m.iter().max_by_key(|(_, &v)| v).unwrap();
    assert_eq!(*most, "transfer", "{m:?}");
    assert!(share(m, "transfer") > 0.6 && share(m, "seek") + share(m, "rotation") < 0.05, "{m:?}");
}

#[test]
fn hdd_write_cache_time_is_cache() {
    // Small sequential writes fit the write cache: the host sees only cache time, the
    // later destage is arm time, and no write reaches the arm with a command overhead.
    let p = params(&[("kind", t("hdd"))]);
    let out = run(&p, SyntheticSpec { rw: "write".into(), count: 1000, span: 1 << 30, ..Default::default() }, 1);
    let m = &out.time_by_mechanism_ns;
    assert!(m["cache"] > 0 && m["command"] == 0, "{m:?}");
}

fn small_ssd(precondition: &str) -> Params {
    params(&[
        ("kind", t("ssd")),
        ("capacity", n((256u64 << 20) as f64)),
        ("over_provisioning", n(0.25)),
        ("channels", n(2.0)),
        ("dies_per_channel", n(2.0)),
        ("precondition", t(precondition)),
    ])
}

#[test]
fn ssd_random_overwrite_past_capacity_collects_garbage_fresh_sequential_does_not() {
    let span = 256 << 20;
    let units = span / 4096;
    let random = run(&small_ssd("none"), SyntheticSpec { rw: "randwrite".into(), count: 3 * units, span, ..Default::default() }, 32);
    let m = &random.time_by_mechanism_ns;
    assert!(m["gc_copy"] > 0 && m["erase"] > 0, "{m:?}");
    assert!(share(m, "gc_copy") + share(m, "erase") > 0.2, "{m:?}");
    let seq = run(&small_ssd("none"), SyntheticSpec { rw: "write".into(), bs: 128 << 10, count: span / (128 << 10), span, ..Default::default() }, 32);
    let m = &seq.time_by_mechanism_ns;
    assert_eq!(m["gc_copy"] + m["erase"], 0, "{m:?}");
    assert!(share(m, "program") > 0.5, "{m:?}");
}

#[test]
fn ssd_parts_add_up_to_the_latency_of_reads_at_depth_one() {
    // One 4 KiB read at a time on a filled drive: command, flash read, channel and host
    // link, plus the fixed latency that is no resource's work.
    let p = small_ssd("sequential");
    let out = run(&p, SyntheticSpec { rw: "randread".into(), count: 3000, span: 256 << 20, ..Default::default() }, 1);
    let m = &out.time_by_mechanism_ns;
    let fixed = 10_000 * out.latencies_ns.len() as u64;
    assert_eq!(total(m) + fixed, out.latencies_ns.iter().sum::<u64>(), "{m:?}");
    assert!(share(m, "read") > 0.5, "{m:?}");
}

#[test]
fn parts_reset_with_the_counters() {
    for p in [small_ssd("random"), hdd_without_cache(), raid5(4.0, 0.0)] {
        let mut m = build(&p).unwrap();
        m.precondition();
        replay(m.as_mut(), &generate(&SyntheticSpec { rw: "randwrite".into(), count: 200, span: 200 << 20, ..Default::default() }).unwrap(), Mode::Closed { queue_depth: 4 }).unwrap();
        assert!(total(&m.time_by_mechanism()) > 0);
        m.reset_counters();
        assert_eq!(total(&m.time_by_mechanism()), 0);
    }
}

#[test]
fn hdd_cache_answers_pay_the_link_and_queue_on_it() {
    // 20 MiB of writes fit the 32 MiB write cache: each is acknowledged once its data
    // crossed the 550 MB/s link, one after another, never all at once.
    let p = params(&[("kind", t("hdd"))]);
    let spec = SyntheticSpec { rw: "write".into(), bs: 1 << 20, count: 20, span: 100 << 30, ..Default::default() };
    let reqs = generate(&spec).unwrap();
    let link = ((1u64 << 20) as f64 * 1000.0 / 550.0).round() as u64;
    let mut m = build(&p).unwrap();
    let burst = replay(m.as_mut(), &reqs, Mode::Open).unwrap();
    assert_eq!(burst.elapsed_ns, 200_000 + 20 * link);
    let out = run(&p, spec, 1);
    // One at a time: each latency is the command overhead and the link, all of it cache time.
    assert!(out.latencies_ns.iter().all(|&l| l == 200_000 + link), "{:?}", out.latencies_ns);
    assert_eq!(out.time_by_mechanism_ns["cache"], out.latencies_ns.iter().sum::<u64>());
}

#[test]
fn raid_controller_cache_hits_pay_its_link() {
    let mut p = raid5(8.0, (64u64 << 20) as f64);
    p.insert("link_mb_per_s".into(), n(1000.0));
    let out = run(&p, SyntheticSpec { rw: "randwrite".into(), count: 4000, span: 7 << 30, ..Default::default() }, 32);
    let s = out.summary();
    assert!(s.mb_per_s <= 1000.0, "{} MB/s through a 1000 MB/s controller link", s.mb_per_s);
    assert_eq!(out.time_by_mechanism_ns["host_link"], 4000 * (4096.0_f64 * 1000.0 / 1000.0).round() as u64);
    // Unstated, the link is the members' eight 550 MB/s links together.
    let out = run(&raid5(8.0, (64u64 << 20) as f64), SyntheticSpec { rw: "randwrite".into(), count: 4000, span: 7 << 30, ..Default::default() }, 32);
    assert_eq!(out.facts["link_mb_per_s"], 8.0 * 550.0);
    assert!(out.summary().mb_per_s <= 4400.0);
}

#[test]
fn each_kind_reports_exactly_the_mechanisms_it_declares() {
    // The declared list is what Python names and explains: a mechanism missing from it would
    // be shown without its words, a declared one the model never reports would be a lie.
    for kind in crate::models::kinds() {
        let p: Params = match kind.name {
            "raid" => raid5(4.0, 0.0),
            "ssd" => params(&[("kind", t("ssd")), ("capacity", n((1u64 << 30) as f64)), ("over_provisioning", n(0.25)), ("precondition", t("none"))]),
            name => params(&[("kind", t(name))]),
        };
        let out = run(&p, SyntheticSpec { rw: "randwrite".into(), count: 200, span: 1 << 28, ..Default::default() }, 4);
        let reported: Vec<&str> = out.time_by_mechanism_ns.keys().copied().collect();
        let mut declared: Vec<&str> = kind.mechanisms.iter().map(|m| m.name).collect();
        declared.sort_unstable();
        assert_eq!(reported, declared, "{}", kind.name);
        assert!(kind.mechanisms.iter().all(|m| !m.cause.is_empty()) && !kind.whole.is_empty(), "{}", kind.name);
    }
}
