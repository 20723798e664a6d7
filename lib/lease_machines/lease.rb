# frozen_string_literal: true

module LeaseMachines
  # A granted lease: +owner+ (Integer), +token+ (Integer) and +expires_at+ (Float seconds from the history's clock
  # origin). Live while +now < expires_at+. Building one from a stored row grants nothing.
  #
  # Lease.new raises TypeError or RangeError for a bad owner or token, ArgumentError for token 0 or a bad time, and
  # keeps +expires_at+ as a Float.
  Lease = Data.define(:owner, :token, :expires_at) do
    include FrozenValue

    # Checks and stores the members (natively, ffi/src/values.rs); values the extension builds skip it.
    def initialize(owner:, token:, expires_at:) = _initialize(owner, token, expires_at)

    # Whether the lease is live at +now+ (Float seconds): +now < expires_at+.
    def live?(now:) = _live(now)

    # Seconds left at +now+ (Float), 0.0 once expired.
    def remaining(now:) = _remaining(now)
  end
end
