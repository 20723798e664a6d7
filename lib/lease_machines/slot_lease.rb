# frozen_string_literal: true

module LeaseMachines
  # A lease in one slot of a semaphore (Store#acquire with +limit:+): the +slot+ (Integer, 0 to MAX_LIMIT - 1) it
  # was granted in, +owner+ and +token+ (Integers: the slot's own rising token) and +expires_at+ (Float seconds from
  # the store's clock origin). Live while +now < expires_at+. Renew, release and fence it with its slot.
  #
  # SlotLease.new raises TypeError for a slot that is not an Integer, ArgumentError for one out of range, and what
  # Lease.new raises for the rest.
  SlotLease = Data.define(:slot, :owner, :token, :expires_at) do
    include FrozenValue

    def initialize(slot:, owner:, token:, expires_at:)
      slot = LeaseMachines.__send__(:_slot, slot) # the store's check of a slot
      lease = Lease.new(owner: owner, token: token, expires_at: expires_at)
      super(slot: slot, owner: lease.owner, token: lease.token, expires_at: lease.expires_at)
    end

    # The slot's lease, without the slot.
    def lease = Lease.new(owner: owner, token: token, expires_at: expires_at)

    # Whether the lease is live at +now+ (Float seconds): +now < expires_at+.
    def live?(now:) = lease.live?(now: now)

    # Seconds left at +now+ (Float), 0.0 once expired.
    def remaining(now:) = lease.remaining(now: now)
  end
end
