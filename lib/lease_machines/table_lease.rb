# frozen_string_literal: true

module LeaseMachines
  # A lease granted by a Table: the resource (String) it is for, +owner+ and +token+ (Integers), +issued_at+ and
  # +expires_at+ (Float seconds from the table's clock origin), the resource's +revision+ when the lease was written,
  # and the election +term+ of a leadership lease (+nil+ otherwise). Live while +now < expires_at+.
  TableLease = Data.define(:resource, :owner, :token, :issued_at, :expires_at, :revision, :term) do
    # Whether the lease is live at +now+ (Float seconds): +now < expires_at+.
    def live?(now:) = now < expires_at

    # Seconds left at +now+ (Float), 0.0 once expired.
    def remaining(now:) = [expires_at - now, 0.0].max

    # A FencedWrite carrying this lease's token for +operation+ (any frozen object: a String, a Symbol), or +nil+
    # when the lease is not live at +now+.
    def fenced_write(operation, now:)
      FencedWrite.new(resource:, owner:, token:, operation:) if live?(now:)
    end
  end
end
