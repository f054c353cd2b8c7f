//! A test model, not a device: one request at a time, each taking `service_ns` plus
//! `ns_per_byte` per byte. It exists to show (and test) that a model kind is one file plus
//! one row in `KINDS`: Python learns its name and mechanisms from the core. It is not
//! offered to users (`Kind::offered`), though a preset naming `kind = "test-fixed"` runs it.

use crate::engine::Ctx;
use crate::models::{Counters, DeviceModel, Kind, Mechanism, Mechanisms};
use crate::params::{ParamReader, Params};
use crate::request::{Ns, Op, Request};
use crate::error::Result;

/// The test model in the kind table (`crate::models::KINDS`).
pub const KIND: Kind = Kind {
    name: "test-fixed",
    build: |p| Ok(Box::new(Fixed::from_params(p)?)),
    mechanisms: &[
        Mechanism { name: "service", cause: "fixed per-request service time" },
        Mechanism { name: "bytes", cause: "per-byte transfer time" },
    ],
    whole: "the test model's busy time",
    offered: false,
};

pub struct Fixed {
    capacity: u64,
    service_ns: Ns,
    ns_per_byte: f64,
    busy_until: Ns,
    host_read_bytes: u64,
    host_write_bytes: u64,
    service_total: Ns,
    bytes_total: Ns,
}

impl Fixed {
    pub fn from_params(params: &Params) -> Result<Self> {
        let r = ParamReader::new(KIND.name, params);
        let model = Fixed {
            capacity: r.int("capacity", 1 << 30, 1 << 20, 1 << 50)?,
            service_ns: r.ns("service_ns", 100_000)?,
            ns_per_byte: r.num("ns_per_byte", 0.0, 0.0, 1e6)?,
            busy_until: 0,
            host_read_bytes: 0,
            host_write_bytes: 0,
            service_total: 0,
            bytes_total: 0,
        };
        r.finish()?;
        Ok(model)
    }
}

impl DeviceModel for Fixed {
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }

    fn submit(&mut self, now: Ns, tag: u64, req: &Request, ctx: &mut dyn Ctx) {
        let bytes_ns = (req.bytes as f64 * self.ns_per_byte).round() as Ns;
        match req.op {
            Op::Read => self.host_read_bytes += req.bytes,
            Op::Write => self.host_write_bytes += req.bytes,
            Op::Trim | Op::Flush => {}
        }
        self.service_total += self.service_ns;
        self.bytes_total += bytes_ns;
        self.busy_until = self.busy_until.max(now) + self.service_ns + bytes_ns;
        ctx.complete(tag, self.busy_until);
    }

    fn reset_counters(&mut self) {
        self.host_read_bytes = 0;
        self.host_write_bytes = 0;
        self.service_total = 0;
        self.bytes_total = 0;
    }

    fn counters(&self) -> Counters {
        Counters::from([("host_read_bytes", self.host_read_bytes), ("host_write_bytes", self.host_write_bytes)])
    }

    fn time_by_mechanism(&self) -> Mechanisms {
        Mechanisms::from([("service", self.service_total), ("bytes", self.bytes_total)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Value;
    use crate::replay::{replay, Mode};

    #[test]
    fn serves_one_request_at_a_time() {
        let mut p = Params::new();
        p.insert("kind".into(), Value::Text("test-fixed".into()));
        p.insert("service_ns".into(), Value::Num(1000.0));
        p.insert("ns_per_byte".into(), Value::Num(0.5));
        let mut m = crate::models::build(&p).unwrap();
        let reqs: Vec<Request> = (0..4).map(|i| Request::new(0, Op::Write, i * 8, 4096)).collect();
        let out = replay(m.as_mut(), &reqs, Mode::Closed { queue_depth: 4 }).unwrap();
        // 4 requests of 1000 + 2048 ns each, back to back
        assert_eq!(out.elapsed_ns, 4 * 3048);
        assert_eq!(out.time_by_mechanism_ns["service"], 4000);
        assert_eq!(out.time_by_mechanism_ns["bytes"], 4 * 2048);
    }
}
