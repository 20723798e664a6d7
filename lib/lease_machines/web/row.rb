# frozen_string_literal: true

module LeaseMachines
  class Web
    # One [resource, slot] row of a page, at the store's +now+: the Store::ResourceState as read, the Lease live at
    # +now+ (the core decides, through ResourceState#lease_at; nil when the slot is free), its +remaining+ Float
    # seconds, and the +state+ shown: :held, :expiring (live with less than the dashboard's expiring_within left) or
    # :free.
    Row = Data.define(:resource_state, :lease, :remaining, :state) do
      # The row of +resource_state+ at +now+ (Float seconds, the store's clock).
      def self.at(resource_state, now, expiring_within)
        lease = resource_state.lease_at(now)
        remaining = lease&.remaining(now: now)
        state = if lease.nil? then :free
                elsif remaining < expiring_within then :expiring
                else :held
                end
        new(resource_state: resource_state, lease: lease, remaining: remaining, state: state)
      end

      def resource = resource_state.resource
      def slot = resource_state.slot
      def highest = resource_state.highest

      # The row's key in the pages' +after+ parameter (PageKey).
      def key = PageKey.encode(resource_state.key)

      # The row as the pages' JSON carries it (the script fills the row's cells from these members).
      def to_h
        { key: key, resource: resource, slot: slot, owner: lease&.owner, token: lease&.token, highest: highest,
          state: state, expires_at: lease&.expires_at, remaining: remaining }
      end
    end
  end
end
