# frozen_string_literal: true

module LeaseMachines
  # A lease granted by a Table: the resource (String) it is for, +owner+ and +token+ (Integers), +issued_at+ and
  # +expires_at+ (Float seconds from the table's clock origin), the resource's +revision+ when the lease was written,
  # and the election +term+ of a leadership lease (+nil+ otherwise). Live while +now < expires_at+.
  #
  # The methods that take +now+ decide natively (ffi/src/records.rs), by the core's rule on the engine's instants:
  # +now+ is converted as every time argument is (a bad one raises as Lease#live? does), so they agree with the
  # Table that granted the lease.
  TableLease = Data.define(:resource, :owner, :token, :issued_at, :expires_at, :revision, :term) do
    # Whether the lease is live at +now+ (Float seconds): +now < expires_at+.
    def live?(now:) = _live(now)

    # Seconds left at +now+ (Float), 0.0 once expired.
    def remaining(now:) = _remaining(now)

    # A FencedWrite carrying this lease's token for +operation+ (any frozen object: a String, a Symbol), or +nil+
    # when the lease is not live at +now+.
    def fenced_write(operation, now:) = _fenced_write(operation, now)
  end
end
