//! Python binding of the allocation micro-benchmark, registered from `crate::bindings`.
//! Latencies cross as lists of integer nanoseconds; I/O errors become OSError.

#![allow(clippy::useless_conversion, clippy::too_many_arguments)]

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{prepare, run, Op, Spec, Sync};

fn spec(dir: PathBuf, count: usize, block: usize, sync: &str, seed: u64, delete_max_blocks: u64) -> PyResult<Spec> {
    let sync = match sync {
        "fsync" => Sync::Fsync,
        "direct" => Sync::Direct,
        "none" => Sync::Buffered,
        other => return Err(PyValueError::new_err(format!("sync `{other}`: expected fsync, direct or none"))),
    };
    if count == 0 || block == 0 || !block.is_multiple_of(512) {
        return Err(PyValueError::new_err("count must be >= 1 and block a multiple of 512 bytes"));
    }
    Ok(Spec { dir, count, block, sync, seed, delete_max_blocks })
}

fn parse_ops(names: Vec<String>) -> PyResult<Vec<Op>> {
    names
        .iter()
        .map(|n| Op::from_name(n).ok_or_else(|| PyValueError::new_err(format!("unknown alloc operation `{n}`"))))
        .collect()
}

/// Lay out the files the named operations need under `dir`, written back before return.
#[pyfunction]
#[pyo3(signature = (dir, ops, count, block=4096, sync="fsync", seed=0, delete_max_blocks=16))]
fn alloc_prepare(
    py: Python<'_>,
    dir: PathBuf,
    ops: Vec<String>,
    count: usize,
    block: usize,
    sync: &str,
    seed: u64,
    delete_max_blocks: u64,
) -> PyResult<()> {
    let s = spec(dir, count, block, sync, seed, delete_max_blocks)?;
    let o = parse_ops(ops)?;
    py.allow_threads(|| prepare(&s, &o)).map_err(PyErr::from)
}

/// Time `count` operations of kind `op`; one latency per operation, in ns.
#[pyfunction]
#[pyo3(signature = (dir, op, count, block=4096, sync="fsync", seed=0, delete_max_blocks=16))]
fn alloc_run(
    py: Python<'_>,
    dir: PathBuf,
    op: String,
    count: usize,
    block: usize,
    sync: &str,
    seed: u64,
    delete_max_blocks: u64,
) -> PyResult<Vec<u64>> {
    let s = spec(dir, count, block, sync, seed, delete_max_blocks)?;
    let o = parse_ops(vec![op])?[0];
    py.allow_threads(|| run(&s, o)).map_err(PyErr::from)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(alloc_prepare, m)?)?;
    m.add_function(wrap_pyfunction!(alloc_run, m)?)?;
    Ok(())
}
