# frozen_string_literal: true

module LeaseMachines
  # What a simulation did and found; every count is a total over the whole run (non-negative Integers).
  #
  # +config+ is the SimulationConfig run. +leases_acquired+ counts grants by +acquire+ (+rotations+ and
  # +transfers+ apart); +takeovers+, grants to an owner other than the resource's previous one; +leases_lost+,
  # holders that learned their lease was gone. +writes_accepted+ and +stale_writes_rejected+ are the storage's
  # verdicts; +late_writes_accepted+, accepted writes whose lease had already ended (safe while fenced: nothing
  # newer was written). +final_token+ is the highest fencing token issued on any one resource (#tokens_issued
  # counts them all). +events+ is the number of table events, all audited: +audit_valid+ is true when the auditor
  # found nothing and no event was lost, +audit_findings+ counts what it found. +violations+ counts accepted writes
  # the independent oracle refused (a token below one already accepted, or one token from two owners): 0 whenever
  # the fence is enforced. +event_digest+ is a 64-bit FNV-1a hash of the whole event log, identical for identical
  # runs.
  SimulationReport = Data.define(:config, :cycles, :leases_acquired, :rotations, :transfers, :renewals, :releases,
                                 :reaps, :takeovers, :leases_lost, :pauses, :clock_steps_back, :clock_rejections,
                                 :restores, :writes_accepted, :stale_writes_rejected, :late_writes_accepted,
                                 :final_token, :events, :audit_valid, :audit_findings, :violations, :event_digest) do
    # The report read from its JSON document (format 1). Raises InvalidDocument.
    def self.from_json(json) = _from_json(json)

    # True when no write broke the fencing rule and the audit found nothing.
    def safe? = violations.zero? && audit_valid

    # Fencing tokens issued over every resource: one per grant (acquisitions, rotations and transfers), as the
    # simulation crate's SimulationReport::tokens_issued counts them. Each resource numbers its own tokens from 1, so
    # with more than one resource this is more than +final_token+, the highest token of any one.
    def tokens_issued = leases_acquired + rotations + transfers

    # The report as a JSON document (format 1): the same bytes for the same configuration, on any machine.
    def to_json(*) = _to_json
  end
end
