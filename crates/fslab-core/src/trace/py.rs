//! Python bindings of the trace module, registered from `crate::bindings` with one call.
//! Columns cross the boundary as `bytes` (numpy wraps them without copying).

// PyO3 0.22's #[pyfunction] expansion converts PyErr into PyErr (a known false positive);
// Python-facing signatures mirror keyword arguments and return plain tuples on purpose.
#![allow(clippy::useless_conversion, clippy::too_many_arguments, clippy::type_complexity)]

use std::time::Duration;

use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::analyze::match_requests;
use super::capture::{RawCapture, ReaderPlan, ReaderStats};
use super::format::{BlockLayout, EventFormat};
use super::page::{parse_page, PageHeader, Records};
use super::summary::{dist_from_hist, summarize, Dist};

/// Layouts of the formats; `devices[i]`, when given, the devices whose events of format i are
/// kept (an empty list: every device's).
fn layouts(formats: &[(String, u8)], devices: Option<Vec<Vec<u32>>>) -> PyResult<Vec<BlockLayout>> {
    let devices = devices.unwrap_or_default();
    if !devices.is_empty() && devices.len() != formats.len() {
        return Err(PyValueError::new_err("devices: one list per event format"));
    }
    formats
        .iter()
        .enumerate()
        .map(|(i, (text, kind))| {
            let mut l = EventFormat::parse(text)
                .and_then(|f| BlockLayout::from_format(&f, *kind))
                .ok_or_else(|| PyValueError::new_err("an event format lacks the block_rq fields fslab needs"))?;
            l.devs = devices.get(i).cloned().unwrap_or_default();
            Ok(l)
        })
        .collect()
}

fn bytes_of<T: Copy>(py: Python<'_>, v: &[T]) -> PyObject {
    // SAFETY: plain integer columns; viewing them as bytes is always valid.
    let b = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) };
    PyBytes::new_bound(py, b).into_any().unbind()
}

fn records_dict<'py>(py: Python<'py>, r: &Records, st: &ReaderStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("time_ns", bytes_of(py, &r.time_ns))?;
    d.set_item("event", bytes_of(py, &r.event))?;
    d.set_item("dev", bytes_of(py, &r.dev))?;
    d.set_item("sector", bytes_of(py, &r.sector))?;
    d.set_item("nr_sector", bytes_of(py, &r.nr_sector))?;
    d.set_item("op", bytes_of(py, &r.op))?;
    d.set_item("flags", bytes_of(py, &r.flags))?;
    d.set_item("pid", bytes_of(py, &r.pid))?;
    d.set_item("comm", bytes_of(py, &r.comm))?;
    d.set_item("comm_names", r.comm_names.clone())?;
    let s = PyDict::new_bound(py);
    s.set_item("pages", st.pages)?;
    s.set_item("bytes", st.bytes)?;
    s.set_item("events", st.events)?;
    s.set_item("skipped", st.skipped)?;
    s.set_item("foreign", st.foreign)?;
    s.set_item("pages_with_missed", st.pages_with_missed)?;
    s.set_item("missed_stored", st.missed_stored)?;
    s.set_item("cpu_ns_during", st.cpu_ns_during)?;
    s.set_item("cpu_ns_after", st.cpu_ns_after)?;
    s.set_item("drains_during", st.drains_during)?;
    s.set_item("decodes_during", st.decodes_during)?;
    d.set_item("stats", s)?;
    Ok(d)
}

/// Readers of every CPU's trace_pipe_raw, decoding block_rq_* events as they arrive.
#[pyclass(name = "RawTraceCapture", module = "fslab._core")]
struct PyRawTraceCapture {
    inner: Option<RawCapture>,
}

#[pymethods]
impl PyRawTraceCapture {
    /// paths: per-CPU trace_pipe_raw files; header_page: text of events/header_page;
    /// formats: (format file text, event kind code); page_size: the sub-buffer size in
    /// bytes; nap_ms: longest sleep between looks at the buffer; hold_bytes: raw bytes a
    /// CPU's reader keeps before decoding them during the run.
    #[new]
    /// read_during_run=False leaves everything in the kernel's buffer until finish.
    /// devices: per format, the devices whose events are kept (None: every device's).
    #[pyo3(signature = (paths, header_page, formats, page_size=4096, nap_ms=1000, hold_bytes=64 << 20, read_during_run=true,
                        devices=None))]
    fn new(paths: Vec<String>, header_page: &str, formats: Vec<(String, u8)>, page_size: usize, nap_ms: u64, hold_bytes: usize,
           read_during_run: bool, devices: Option<Vec<Vec<u32>>>) -> PyResult<Self> {
        let l = layouts(&formats, devices)?;
        let plan = ReaderPlan { page_size, nap: Duration::from_millis(nap_ms), hold_bytes, read_during_run };
        let inner = RawCapture::start(&paths, PageHeader::parse(header_page), l, plan).map_err(PyOSError::new_err)?;
        Ok(PyRawTraceCapture { inner: Some(inner) })
    }

    /// Call after tracing is off: drains every CPU, joins the readers, returns columns.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = self.inner.take().ok_or_else(|| PyValueError::new_err("capture already finished"))?;
        let (r, st) = py.allow_threads(|| inner.finish()).map_err(PyOSError::new_err)?;
        records_dict(py, &r, &st)
    }
}

/// One reading of the CPU's time-stamp counter beside CLOCK_MONOTONIC: (tsc, mono_ns), the
/// counter read between two clock reads and paired with their midpoint, the narrowest of 9
/// tries (a preempted try is wide). None where fslab reads no TSC (not x86-64).
/// Two such pairs around a capture map the kernel's `x86-tsc` trace clock onto CLOCK_MONOTONIC.
#[pyfunction]
fn tsc_mono_pair() -> Option<(u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    {
        let mono = || {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: clock_gettime writes the timespec it is given.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let mut best: Option<(u64, u64, u64)> = None; // (width, tsc, mid)
        for _ in 0..9 {
            let before = mono();
            // SAFETY: rdtsc and lfence are part of x86-64 itself (rdtscp is not: QEMU's
            // default TCG CPU lacks it). The fences order the read as the kernel's
            // rdtsc_ordered does.
            let tsc = unsafe {
                std::arch::x86_64::_mm_lfence();
                let t = std::arch::x86_64::_rdtsc();
                std::arch::x86_64::_mm_lfence();
                t
            };
            let after = mono();
            let width = after - before;
            if best.is_none_or(|b| width < b.0) {
                best = Some((width, tsc, before + width / 2));
            }
        }
        best.map(|(_, tsc, mid)| (tsc, mid))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Decode a file of concatenated raw pages (as trace_pipe_raw hands them over).
#[pyfunction]
#[pyo3(signature = (data, header_page, formats, page_size=4096))]
fn trace_parse_raw_pages<'py>(py: Python<'py>, data: &[u8], header_page: &str, formats: Vec<(String, u8)>, page_size: usize) -> PyResult<Bound<'py, PyDict>> {
    let l = layouts(&formats, None)?;
    let h = PageHeader::parse(header_page);
    let mut r = Records::default();
    let mut st = ReaderStats::default();
    for page in data.chunks(page_size) {
        let info = parse_page(page, &h, &l, &mut r);
        st.pages += 1;
        st.bytes += page.len() as u64;
        st.events += info.events;
        st.skipped += info.skipped;
        st.foreign += info.foreign;
        st.pages_with_missed += info.missed as u64;
        st.missed_stored += info.missed_count;
    }
    // pages of several CPUs: put the events in time order, as a live capture does
    let r = Records::merge(vec![r]);
    records_dict(py, &r, &st)
}

fn view<'a, T: Element + Copy>(buf: &'a PyBuffer<T>, name: &str) -> PyResult<&'a [T]> {
    if !buf.is_c_contiguous() {
        return Err(PyValueError::new_err(format!("column {name} must be contiguous")));
    }
    // SAFETY: contiguous buffer of item_count elements of T, kept alive by `buf`.
    Ok(unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const T, buf.item_count()) })
}

/// Issue-to-complete latency (ns, -1 if unmatched) and counted-request flag per event.
/// (op, flags) of one rwbs string: fslab's one decoder (crate::trace::decode_rwbs).
#[pyfunction]
fn trace_decode_rwbs(rwbs: &str) -> (u8, u8) {
    super::decode_rwbs(rwbs.as_bytes())
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn trace_match_requests(
    py: Python<'_>, time_ns: PyBuffer<u64>, event: PyBuffer<u8>, dev: PyBuffer<u32>, sector: PyBuffer<u64>,
    nr_sector: PyBuffer<u32>, op: PyBuffer<u8>, flags: PyBuffer<u8>,
) -> PyResult<(PyObject, PyObject)> {
    let (t, e, d, s, n, o, f) = (
        view(&time_ns, "time_ns")?, view(&event, "event")?, view(&dev, "dev")?, view(&sector, "sector")?,
        view(&nr_sector, "nr_sector")?, view(&op, "op")?, view(&flags, "flags")?,
    );
    let len = t.len();
    if [e.len(), d.len(), s.len(), n.len(), o.len(), f.len()].iter().any(|&l| l != len) {
        return Err(PyValueError::new_err("columns differ in length"));
    }
    let (lat, counted) = py.allow_threads(|| match_requests(t, e, d, s, n, o, f));
    Ok((bytes_of(py, &lat), bytes_of(py, &counted)))
}

fn dist_dict<'py>(py: Python<'py>, d: &Dist, scale: f64) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new_bound(py);
    out.set_item("count", d.count)?;
    if d.count > 0 {
        out.set_item("min", d.min * scale)?;
        out.set_item("max", d.max * scale)?;
        out.set_item("mean", d.mean * scale)?;
        out.set_item("pct", d.pct.iter().map(|v| v * scale).collect::<Vec<f64>>())?;
    }
    Ok(out)
}

/// One-pass summary of a trace (see `summary::summarize`); percentiles are taken at
/// `pcts` (0-100). Sizes in bytes, seeks in sectors, latency in ns.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn trace_summarize<'py>(
    py: Python<'py>, time_ns: PyBuffer<u64>, event: PyBuffer<u8>, dev: PyBuffer<u32>, sector: PyBuffer<u64>,
    nr_sector: PyBuffer<u32>, op: PyBuffer<u8>, flags: PyBuffer<u8>, comm: PyBuffer<u16>, pcts: Vec<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let (t, e, d, s, n, o, f, c) = (
        view(&time_ns, "time_ns")?, view(&event, "event")?, view(&dev, "dev")?, view(&sector, "sector")?,
        view(&nr_sector, "nr_sector")?, view(&op, "op")?, view(&flags, "flags")?, view(&comm, "comm")?,
    );
    let len = t.len();
    if [e.len(), d.len(), s.len(), n.len(), o.len(), f.len(), c.len()].iter().any(|&l| l != len) {
        return Err(PyValueError::new_err("columns differ in length"));
    }
    let (mut sm, dists) = py.allow_threads(|| {
        let mut sm = summarize(t, e, d, s, n, o, f, c);
        let dists: Vec<(Dist, Dist, Dist)> = sm.dirs.iter_mut().map(|dir| {
            let bytes: std::collections::BTreeMap<u64, u64> = dir.sizes.iter().map(|(&k, &v)| (k * 512, v)).collect();
            dir.size_sorted = bytes.iter().map(|(&k, &v)| (k, v)).collect();
            (dist_from_hist(&bytes, &pcts), dir.seeks.dist(&pcts), dir.latency_ns.dist(&pcts))
        }).collect();
        (sm, dists)
    });
    let out = PyDict::new_bound(py);
    out.set_item("requests", sm.requests.to_vec())?;
    out.set_item("sectors", sm.sectors.to_vec())?;
    out.set_item("flag_counts", sm.flag_counts.to_vec())?;
    out.set_item("used_issue_events", sm.used_issue_events)?;
    let tasks: Vec<(u16, u64, u64)> = sm.tasks.iter().map(|(&k, &(r, b))| (k, r, b)).collect();
    out.set_item("tasks", tasks)?;
    let dirs = pyo3::types::PyList::empty_bound(py);
    for (dir, (size, seek, lat)) in sm.dirs.iter_mut().zip(dists.iter()) {
        let dd = PyDict::new_bound(py);
        dd.set_item("size_bytes", dist_dict(py, size, 1.0)?)?;
        dd.set_item("size_hist", dir.size_sorted.clone())?;
        dd.set_item("seek_sectors", dist_dict(py, seek, 1.0)?)?;
        dd.set_item("latency_ns", dist_dict(py, lat, 1.0)?)?;
        dd.set_item("transitions", dir.transitions)?;
        dd.set_item("sequential", dir.sequential)?;
        dd.set_item("forward", dir.forward)?;
        dirs.append(dd)?;
    }
    out.set_item("directions", dirs)?;
    Ok(out)
}

/// Register the trace functions and classes in the `_core` module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRawTraceCapture>()?;
    m.add_function(wrap_pyfunction!(trace_parse_raw_pages, m)?)?;
    m.add_function(wrap_pyfunction!(tsc_mono_pair, m)?)?;
    m.add_function(wrap_pyfunction!(trace_match_requests, m)?)?;
    m.add_function(wrap_pyfunction!(trace_decode_rwbs, m)?)?;
    m.add_function(wrap_pyfunction!(trace_summarize, m)?)?;
    Ok(())
}
