# frozen_string_literal: true

module LeaseMachines
  # The holder's side of one lease, on the holder's own clock: when to renew, how much to trust the lease, when to
  # stop. Deadlines count from the instant the confirmed request was sent, never from when its reply arrived.
  class Holder
    # A holder of a fresh grant with +token+, whose acquire request was sent at +at+ (Float seconds), renewing on
    # +cadence+ (a Cadence).
    def self.new(token:, at:, cadence:) = _new(token, at, cadence)

    # Records that a renewal request is sent at +now+. False once expired or fenced.
    def refresh(now:) = _refresh(now)

    # Records the authority's confirmation of +token+, received at +at+. False for a stale (older) token.
    def confirm(token:, at:) = _confirm(token, at)

    # Records a new grant with a strictly newer +token+, requested at +at+.
    def reacquire(token:, at:) = _reacquire(token, at)

    # Whether a renewal should be sent at +now+.
    def renewal_due?(now:) = _renewal_due(now)

    # Whether the lease should not be trusted at +now+.
    def at_risk?(now:) = _at_risk(now)
  end
end
