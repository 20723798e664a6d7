# frozen_string_literal: true

module LeaseMachines
  # The whole state of an Authority: +last_issued+ (the token high-water, Integer or nil), +lease+ (Lease or nil)
  # and +observed+ (the clock watermark, Float seconds). Checkpoint.new raises ArgumentError for parts no history can
  # produce (a lease whose token was never issued), TypeError for a lease that is not a Lease.
  Checkpoint = Data.define(:last_issued, :lease, :observed) do
    include FrozenValue

    # Checks and stores the members (natively, ffi/src/values.rs); values the extension builds skip it.
    def initialize(last_issued:, lease:, observed:) = _initialize(last_issued, lease, observed)

    # The checkpoint read from its JSON document (format 1, see core/FORMAT.md). Raises InvalidDocument.
    def self.from_json(json) = _from_json(json)

    # Whether this history issued +token+ (an Integer in 0..2**64-1): some token was issued and +token+ is at most
    # +last_issued+ (token 0 never is). Raises TypeError or RangeError for anything else.
    def issued?(token) = _issued(token)

    # The checkpoint as a JSON document (format 1): times in integer nanoseconds, nothing rounded.
    def to_json(*) = _to_json
  end
end
