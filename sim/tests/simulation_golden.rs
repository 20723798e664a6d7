//! Every report in `reports.jsonl` is what its configuration runs to today, byte for byte: the event digest, every
//! count and the JSON document. The runs cover both scenarios, one and several resources, both clock policies, the
//! fence disabled, frequent restores, the shortest TTL, a TTL that is no whole number of microseconds, and 1,024
//! workers on 1,024 resources. A change that alters any of them alters what every earlier run reported.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index
#![cfg(feature = "serde")]

use lease_machines::json::Json;
use lease_machines_sim::{simulate, SimulationReport};

#[test]
fn every_recorded_run_gives_the_same_report_byte_for_byte() {
    let recorded = include_str!("reports.jsonl");
    assert_eq!(recorded.lines().count(), 15);
    for line in recorded.lines() {
        let expected = SimulationReport::from_json(line).unwrap_or_else(|error| panic!("{line}: {error}"));
        let report = simulate(&expected.config).unwrap_or_else(|error| panic!("{line}: {error}"));
        assert_eq!(report, expected);
        assert_eq!(report.to_json(), line);
    }
}
