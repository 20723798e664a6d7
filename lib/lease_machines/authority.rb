# frozen_string_literal: true

module LeaseMachines
  # The single authority for one resource: decides who holds the lease and until when. See README.md, "How the
  # Authority decides", for the rules and the rejection table.
  class Authority
    # A fresh authority for a namespace that has never issued a token. +clock_policy+ is +:reject+ (a +now+ before
    # the latest one seen is refused as +:clock_regressed+) or +:clamp+ (evaluated at the latest one instead).
    # Raises ArgumentError for an unknown policy, TypeError for a non-Symbol.
    def self.new(clock_policy: :reject) = _new(clock_policy)

    # An authority that continues the history in +checkpoint+ (a Checkpoint), deciding every later request as the
    # authority that produced it would have.
    def self.restore(checkpoint, clock_policy: :reject) = _restore(checkpoint, clock_policy)

    # Asks for the lease for +owner+ (Integer, 0..2**64-1) at +now+ (Float seconds) for +ttl+ (Float seconds).
    # Granted with a token greater than every earlier one when no lease is live at +now+.
    def acquire(owner:, now:, ttl:) = _acquire(owner, now, ttl)

    # Like #acquire, but the owner of the live lease gets a new lease with a new, greater token (the old token is
    # stale from then on). Another owner's live lease is still +:occupied+.
    def reacquire(owner:, now:, ttl:) = _reacquire(owner, now, ttl)

    # Extends the current lease to max(expires_at, now + ttl), keeping its token. Needs the current owner and token.
    def renew(owner:, token:, now:, ttl:) = _renew(owner, token, now, ttl)

    # Gives the current lease back. Needs the current owner and token.
    def release(owner:, token:, now:) = _release(owner, token, now)
  end
end
