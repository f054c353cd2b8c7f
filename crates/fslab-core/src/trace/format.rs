//! Event `format` files: the field offsets of a tracepoint on this kernel. IDs and
//! offsets differ between kernels, so they are always read, never assumed.

use std::collections::HashMap;

/// One parsed `events/<system>/<event>/format` file.
#[derive(Debug, Clone)]
pub struct EventFormat {
    pub name: String,
    pub id: u16,
    /// field name -> (offset, size) in bytes from the start of the event payload.
    pub fields: HashMap<String, (usize, usize)>,
}

impl EventFormat {
    /// Parse the text of a format file; `None` when the name, ID or fields are missing.
    pub fn parse(text: &str) -> Option<EventFormat> {
        let mut name = None;
        let mut id = None;
        let mut fields = HashMap::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("name:") {
                name = Some(rest.trim().to_string());
            } else if let Some(rest) = line.strip_prefix("ID:") {
                id = rest.trim().parse().ok();
            } else if let Some(rest) = line.strip_prefix("field:") {
                if let Some((fname, o, s)) = parse_field(rest) {
                    fields.insert(fname, (o, s));
                }
            }
        }
        Some(EventFormat { name: name?, id: id?, fields })
    }
}

/// One `field:` line of a tracefs format file (after "field:"), e.g.
/// "char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;" -> ("rwbs", 34, 10).
pub fn parse_field(rest: &str) -> Option<(String, usize, usize)> {
    let mut parts = rest.split(';');
    let decl = parts.next().unwrap_or("").trim();
    let mut offset = None;
    let mut size = None;
    for p in parts {
        let p = p.trim();
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.trim().parse().ok();
        }
    }
    let last = decl.rsplit(' ').next().unwrap_or("");
    let name = last.split('[').next().unwrap_or("").to_string();
    Some((name, offset?, size?))
}

/// Where the fields fslab keeps sit in one block_rq_* event, and which devices' events of
/// that kind are kept.
#[derive(Debug, Clone)]
pub struct BlockLayout {
    pub id: u16,
    pub kind: u8,
    pub pid: usize,
    pub dev: usize,
    pub sector: usize,
    pub nr_sector: usize,
    pub rwbs: (usize, usize),
    pub comm: Option<(usize, usize)>,
    /// bytes the payload must have for every field to be inside it.
    pub min_len: usize,
    /// The devices (major << 20 | minor) whose events are kept; empty: every device's (a
    /// capture whose kernel filter already kept only those, or one of any device).
    pub devs: Vec<u32>,
}

impl BlockLayout {
    /// Build a layout from a format; `None` if a required field is missing or odd-sized.
    pub fn from_format(f: &EventFormat, kind: u8) -> Option<BlockLayout> {
        let get = |n: &str, size: usize| f.fields.get(n).filter(|(_, s)| *s == size).map(|(o, _)| *o);
        let pid = get("common_pid", 4)?;
        let dev = get("dev", 4)?;
        let sector = get("sector", 8)?;
        let nr_sector = get("nr_sector", 4)?;
        let rwbs = *f.fields.get("rwbs")?;
        let comm = f.fields.get("comm").copied();
        let mut min_len = [pid + 4, dev + 4, sector + 8, nr_sector + 4, rwbs.0 + rwbs.1]
            .into_iter()
            .max()
            .unwrap_or(0);
        if let Some((o, s)) = comm {
            min_len = min_len.max(o + s);
        }
        Some(BlockLayout { id: f.id, kind, pid, dev, sector, nr_sector, rwbs, comm, min_len, devs: Vec::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUE: &str = "name: block_rq_issue\nID: 2104\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;\n\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n";

    #[test]
    fn parses_a_format_file() {
        let f = EventFormat::parse(ISSUE).unwrap();
        assert_eq!(f.id, 2104);
        assert_eq!(f.fields["rwbs"], (34, 10));
        assert_eq!(f.fields["cmd"], (60, 4));
        let l = BlockLayout::from_format(&f, 0).unwrap();
        assert_eq!(l.comm, Some((44, 16)));
        assert_eq!(l.min_len, 60);
    }
}
