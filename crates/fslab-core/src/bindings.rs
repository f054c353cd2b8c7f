//! PyO3 bindings: the thin layer that turns Rust types and errors into Python ones.

use pyo3::prelude::*;

/// Version of the native core, so provenance can record which build produced a number.
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    crate::trace::py::register(m)?;
    Ok(())
}
