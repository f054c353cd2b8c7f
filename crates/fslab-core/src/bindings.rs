//! PyO3 bindings: the thin layer that turns Rust types and errors into Python ones.
//! Core errors become `ValueError`; `fslab.simulate` re-raises them as SimulationError.

// PyO3 0.22's #[pyfunction] expansion converts PyErr into PyErr (a known false positive);
// Python-facing signatures mirror keyword arguments and return plain tuples on purpose.
#![allow(clippy::useless_conversion, clippy::too_many_arguments, clippy::type_complexity)]

use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyString};

use crate::error::CoreError;
use crate::models::build;
use crate::params::{Params, Value};
use crate::replay::{replay, Mode, ReplayOutcome};
use crate::request::{Op, Request};
use crate::synthetic::{generate, SyntheticSpec};

/// Version of the native core, so provenance can record which build produced a number.
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

fn to_py_err(e: CoreError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn params_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Params> {
    let mut p = Params::new();
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        let value = if v.is_instance_of::<PyString>() {
            Value::Text(v.extract()?)
        } else if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
            Value::Num(v.extract::<f64>()?)
        } else {
            return Err(PyValueError::new_err(format!("model parameter `{key}`: expected a number or text")));
        };
        p.insert(key, value);
    }
    Ok(p)
}

fn synthetic_from_dict(d: &Bound<'_, PyDict>) -> PyResult<SyntheticSpec> {
    let mut s = SyntheticSpec::default();
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "rw" => s.rw = v.extract()?,
            "bs" => s.bs = v.extract()?,
            "count" => s.count = v.extract()?,
            "span" => s.span = v.extract()?,
            "offset" => s.offset = v.extract()?,
            "seed" => s.seed = v.extract()?,
            "rwmixread" => s.rwmixread = v.extract()?,
            "rate_iops" => s.rate_iops = v.extract()?,
            "poisson" => s.poisson = v.extract()?,
            "fsync_every" => s.fsync_every = v.extract()?,
            other => {
                return Err(PyValueError::new_err(format!(
                    "synthetic stream: unknown key `{other}` (known: rw, bs, count, span, offset, seed, \
                     rwmixread, rate_iops, poisson, fsync_every)"
                )))
            }
        }
    }
    Ok(s)
}

struct Run {
    outcome: ReplayOutcome,
    replay_wall_ns: u128,
    precondition_wall_ns: u128,
}

/// Build, precondition and replay. A panic (a bug, never expected from input) becomes a
/// model error here, so none crosses into Python as a PanicException.
fn run_model(params: Params, reqs: Vec<Request>, qd: u32, open_loop: bool) -> Result<Run, CoreError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_model_inner(params, reqs, qd, open_loop)))
        .unwrap_or_else(|payload| {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            Err(CoreError::Model(format!("internal error in the device model ({what}); please report it")))
        })
}

fn run_model_inner(params: Params, reqs: Vec<Request>, qd: u32, open_loop: bool) -> Result<Run, CoreError> {
    let mut model = build(&params)?;
    let t0 = Instant::now();
    model.precondition();
    model.reset_counters();
    let t1 = Instant::now();
    let mode = if open_loop { Mode::Open } else { Mode::Closed { queue_depth: qd } };
    let outcome = replay(model.as_mut(), &reqs, mode)?;
    let t2 = Instant::now();
    Ok(Run { outcome, replay_wall_ns: (t2 - t1).as_nanos(), precondition_wall_ns: (t1 - t0).as_nanos() })
}

fn result_dict<'py>(py: Python<'py>, run: &Run, per_io: bool) -> PyResult<Bound<'py, PyDict>> {
    let s = run.outcome.summary();
    let d = PyDict::new_bound(py);
    d.set_item("requests", s.requests)?;
    d.set_item("elapsed_ns", s.elapsed_ns)?;
    d.set_item("iops", s.iops)?;
    d.set_item("mb_per_s", s.mb_per_s)?;
    // Nanoseconds, as every time crossing into Python: the edge that prints converts.
    let lat = PyDict::new_bound(py);
    lat.set_item("mean", s.latency_mean_ns)?;
    lat.set_item("p50", s.latency_p50_ns)?;
    lat.set_item("p99", s.latency_p99_ns)?;
    lat.set_item("max", s.latency_max_ns)?;
    d.set_item("latency_ns", lat)?;
    d.set_item("write_amplification", s.write_amplification)?;
    let c = &run.outcome.counters;
    d.set_item("gc_runs", c.get("gc_runs").copied().unwrap_or(0))?;
    d.set_item("erases", c.get("erases").copied().unwrap_or(0))?;
    let counters = PyDict::new_bound(py);
    for (k, v) in c {
        counters.set_item(*k, *v)?;
    }
    d.set_item("counters", counters)?;
    let facts = PyDict::new_bound(py);
    for (k, v) in &run.outcome.facts {
        facts.set_item(*k, *v)?;
    }
    d.set_item("model_facts", facts)?;
    let mechanisms = PyDict::new_bound(py);
    for (k, v) in &run.outcome.time_by_mechanism_ns {
        mechanisms.set_item(*k, *v)?;
    }
    d.set_item("time_by_mechanism_ns", mechanisms)?;
    d.set_item("replay_wall_ns", run.replay_wall_ns)?;
    d.set_item("precondition_wall_ns", run.precondition_wall_ns)?;
    if per_io {
        d.set_item("latencies_ns", run.outcome.latencies_ns.clone())?;
    }
    Ok(d)
}

/// Replay a request list on a model. `op` holds one ASCII letter per request (R, W, D
/// for discard/TRIM, F for flush); `fua` (optional) one byte per request, non-zero for
/// force-unit-access. Times in ns, positions in 512-byte sectors, sizes in bytes.
#[pyfunction]
#[pyo3(signature = (params, time_ns, op, sector, nbytes, fua=None, qd=1, open_loop=false, per_io=false))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    params: &Bound<'_, PyDict>,
    time_ns: Vec<u64>,
    op: &[u8],
    sector: Vec<u64>,
    nbytes: Vec<u64>,
    fua: Option<&[u8]>,
    qd: u32,
    open_loop: bool,
    per_io: bool,
) -> PyResult<Py<PyDict>> {
    let n = time_ns.len();
    if op.len() != n || sector.len() != n || nbytes.len() != n || fua.is_some_and(|f| f.len() != n) {
        return Err(PyValueError::new_err("request columns differ in length"));
    }
    let mut reqs = Vec::with_capacity(n);
    for i in 0..n {
        let o = Op::from_code(op[i])
            .ok_or_else(|| PyValueError::new_err(format!("request {i}: unknown op {:?}", op[i] as char)))?;
        let mut r = Request::new(time_ns[i], o, sector[i], nbytes[i]);
        r.fua = fua.is_some_and(|f| f[i] != 0);
        reqs.push(r);
    }
    let p = params_from_dict(params)?;
    let run = py.allow_threads(|| run_model(p, reqs, qd, open_loop)).map_err(to_py_err)?;
    Ok(result_dict(py, &run, per_io)?.unbind())
}

/// Replay a synthetic stream (see `SyntheticSpec`) on a model.
#[pyfunction]
#[pyo3(signature = (params, synthetic, qd=1, open_loop=false, per_io=false))]
fn simulate_synthetic(
    py: Python<'_>,
    params: &Bound<'_, PyDict>,
    synthetic: &Bound<'_, PyDict>,
    qd: u32,
    open_loop: bool,
    per_io: bool,
) -> PyResult<Py<PyDict>> {
    let spec = synthetic_from_dict(synthetic)?;
    let p = params_from_dict(params)?;
    let run = py
        .allow_threads(|| generate(&spec).and_then(|reqs| run_model(p, reqs, qd, open_loop)))
        .map_err(to_py_err)?;
    Ok(result_dict(py, &run, per_io)?.unbind())
}

/// The synthetic stream itself, as (time_ns, op letters, sector, bytes) columns.
#[pyfunction]
fn synthetic_requests(synthetic: &Bound<'_, PyDict>) -> PyResult<(Vec<u64>, Vec<u8>, Vec<u64>, Vec<u64>)> {
    let reqs = generate(&synthetic_from_dict(synthetic)?).map_err(to_py_err)?;
    let code = |o: Op| match o {
        Op::Read => b'R',
        Op::Write => b'W',
        Op::Trim => b'D',
        Op::Flush => b'F',
    };
    Ok((
        reqs.iter().map(|r| r.time_ns).collect(),
        reqs.iter().map(|r| code(r.op)).collect(),
        reqs.iter().map(|r| r.sector).collect(),
        reqs.iter().map(|r| r.bytes).collect(),
    ))
}

/// Reference for benchmarks: a plain loop over the same synthetic stream that does the
/// least a replay must (read each request, derive a completion time, store a latency).
/// Returns (requests, wall time in ns).
#[pyfunction]
fn reference_loop(py: Python<'_>, synthetic: &Bound<'_, PyDict>) -> PyResult<(u64, u128)> {
    let reqs = generate(&synthetic_from_dict(synthetic)?).map_err(to_py_err)?;
    Ok(py.allow_threads(|| {
        let mut lat = vec![0u64; reqs.len()];
        let t0 = Instant::now();
        let mut now = 0u64;
        for (i, r) in reqs.iter().enumerate() {
            let done = now + 1000 + (r.sector ^ r.bytes) % 7;
            lat[i] = done - now;
            now = done;
        }
        let wall = t0.elapsed().as_nanos();
        std::hint::black_box(&lat);
        (reqs.len() as u64, wall)
    }))
}

/// The SSD model's memory floor for benchmarks (`crate::models::floor`): only the FTL map
/// accesses a replay must do, over the same synthetic stream on the maps of the SSD
/// `params` describe, with `copies_per_write` GC copies per host write. Returns
/// (requests, wall time in ns of the loop alone).
#[pyfunction]
fn ssd_floor_loop(
    py: Python<'_>,
    params: &Bound<'_, PyDict>,
    synthetic: &Bound<'_, PyDict>,
    copies_per_write: f64,
    serialized: bool,
) -> PyResult<(u64, u128)> {
    if !copies_per_write.is_finite() {
        // an infinite credit of copies would never run out: the loop would not end
        return Err(PyValueError::new_err(format!("copies_per_write must be finite, not {copies_per_write}")));
    }
    let reqs = generate(&synthetic_from_dict(synthetic)?).map_err(to_py_err)?;
    let p = params_from_dict(params)?;
    let wall = py
        .allow_threads(|| crate::models::floor::floor_replay(&p, &reqs, copies_per_write.max(0.0), serialized))
        .map_err(to_py_err)?;
    Ok((reqs.len() as u64, wall))
}

/// Logical capacity in bytes the model `params` describe offers the host (built by the
/// model itself, so RAID geometry and rounding are the model's, not a Python copy).
#[pyfunction]
fn model_capacity(params: &Bound<'_, PyDict>) -> PyResult<u64> {
    let p = params_from_dict(params)?;
    Ok(crate::models::build(&p).map_err(to_py_err)?.capacity_bytes())
}

/// Every model kind the core builds: a dict per kind with `kind` (the preset's `[model]
/// kind`), `offered` (false: kept for tests, listed to nobody), `whole` (what its
/// mechanisms' times add up to, in words) and `mechanisms`, a list of (name, cause in
/// words) in the order the model documents them (`crate::models::KINDS`).
#[pyfunction]
fn model_kinds(py: Python<'_>) -> PyResult<Vec<Py<PyDict>>> {
    let mut out = Vec::new();
    for kind in crate::models::kinds() {
        let d = PyDict::new_bound(py);
        d.set_item("kind", kind.name)?;
        d.set_item("offered", kind.offered)?;
        d.set_item("whole", kind.whole)?;
        let mechanisms: Vec<(&str, &str)> = kind.mechanisms.iter().map(|m| (m.name, m.cause)).collect();
        d.set_item("mechanisms", mechanisms)?;
        out.push(d.unbind());
    }
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(model_capacity, m)?)?;
    m.add_function(wrap_pyfunction!(model_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_synthetic, m)?)?;
    m.add_function(wrap_pyfunction!(synthetic_requests, m)?)?;
    m.add_function(wrap_pyfunction!(reference_loop, m)?)?;
    m.add_function(wrap_pyfunction!(ssd_floor_loop, m)?)?;
    // block-layer tracing (crate::trace::py): its own registration, one line here
    crate::trace::py::register(m)?;
    // timed file-system operations (crate::alloc::py)
    crate::alloc::py::register(m)?;
    Ok(())
}
