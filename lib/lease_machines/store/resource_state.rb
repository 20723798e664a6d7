# frozen_string_literal: true

module LeaseMachines
  class Store
    # One lease of a store as Store#resources lists it: the +resource+ and +slot+ (0 for the resource's lease, 1 to
    # 1023 for a semaphore's slots), the lease on record (+owner+, +token+, +expires_at+; nil when vacant; it may
    # have expired), the token high-water +last_issued+, the clock watermark +observed+ (Float seconds), the
    # +revision+, and +highest+, the fence's mark (the newest token a fenced write carried; nil before any).
    ResourceState = Data.define(:resource, :slot, :owner, :token, :expires_at, :last_issued, :observed, :revision,
                                :highest) do
      # The lease's key, [resource, slot]: Store#resources pages by it (+after:+).
      def key = [resource, slot]

      # The lease on record (a Lease), live or not; nil when vacant.
      def lease = token && Lease.new(owner: owner, token: token, expires_at: expires_at)

      # The lease on record if it is live at +now+ (Float seconds; by the core's rule, Lease#live?), else nil.
      def lease_at(now)
        held = lease
        held if held&.live?(now: now)
      end
    end
  end
end
