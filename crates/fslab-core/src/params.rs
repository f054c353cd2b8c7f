//! Model parameters: a flat name -> value map (built from a TOML preset plus `--set`
//! overrides by the Python layer). A `ParamReader` takes values out with defaults and
//! ranges and rejects names the model does not know, so a typo never passes silently.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use crate::error::{CoreError, Result};

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Num(f64),
    Text(String),
}

pub type Params = BTreeMap<String, Value>;

pub struct ParamReader<'a> {
    kind: &'static str,
    params: &'a Params,
    /// Keys with this prefix belong to a nested model (e.g. RAID members) and are not ours.
    foreign_prefix: Option<&'static str>,
    used: RefCell<BTreeSet<String>>,
}

impl<'a> ParamReader<'a> {
    pub fn new(kind: &'static str, params: &'a Params) -> Self {
        let reader = ParamReader { kind, params, foreign_prefix: None, used: RefCell::new(BTreeSet::new()) };
        reader.used.borrow_mut().insert("kind".into());
        reader
    }

    pub fn with_foreign_prefix(mut self, prefix: &'static str) -> Self {
        self.foreign_prefix = Some(prefix);
        self
    }

    /// A number in `[min, max]`, or `default` when absent.
    pub fn num(&self, name: &str, default: f64, min: f64, max: f64) -> Result<f64> {
        self.used.borrow_mut().insert(name.to_string());
        let value = match self.params.get(name) {
            None => default,
            Some(Value::Num(v)) => *v,
            Some(Value::Text(t)) => {
                return Err(CoreError::BadParam { name: name.into(), reason: format!("expected a number, got {t:?}") })
            }
        };
        if !(value >= min && value <= max) {
            return Err(CoreError::BadParam { name: name.into(), reason: format!("{value} is outside [{min}, {max}]") });
        }
        Ok(value)
    }

    /// A whole number in `[min, max]`.
    pub fn int(&self, name: &str, default: u64, min: u64, max: u64) -> Result<u64> {
        let v = self.num(name, default as f64, min as f64, max as f64)?;
        if v.fract() != 0.0 {
            return Err(CoreError::BadParam { name: name.into(), reason: format!("{v} is not a whole number") });
        }
        Ok(v as u64)
    }

    /// A time given in nanoseconds as a number (the presets write `_us`/`_ms` names in
    /// Python, converted there); stored as integer nanoseconds.
    pub fn ns(&self, name: &str, default: u64) -> Result<u64> {
        Ok(self.num(name, default as f64, 0.0, 1e15)?.round() as u64)
    }

    pub fn text(&self, name: &str, default: &str, allowed: &[&str]) -> Result<String> {
        self.used.borrow_mut().insert(name.to_string());
        let value = match self.params.get(name) {
            None => default.to_string(),
            Some(Value::Text(t)) => t.clone(),
            Some(Value::Num(n)) => {
                return Err(CoreError::BadParam { name: name.into(), reason: format!("expected text, got {n}") })
            }
        };
        if !allowed.contains(&value.as_str()) {
            return Err(CoreError::BadParam { name: name.into(), reason: format!("{value:?} is not one of {allowed:?}") });
        }
        Ok(value)
    }

    /// Call after reading everything: fails on any parameter the model did not ask for.
    pub fn finish(&self) -> Result<()> {
        let used = self.used.borrow();
        for key in self.params.keys() {
            if used.contains(key) {
                continue;
            }
            if let Some(prefix) = self.foreign_prefix {
                if key.starts_with(prefix) {
                    continue;
                }
            }
            let known: Vec<&str> = used.iter().map(|s| s.as_str()).filter(|k| *k != "kind").collect();
            return Err(CoreError::UnknownParam { name: key.clone(), kind: self.kind.into(), known: known.join(", ") });
        }
        Ok(())
    }
}

/// The sub-map of `params` under `prefix` (with the prefix removed).
pub fn sub_params(params: &Params, prefix: &str) -> Params {
    params
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(prefix).map(|rest| (rest.to_string(), v.clone())))
        .collect()
}
