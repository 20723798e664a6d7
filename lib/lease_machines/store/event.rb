# frozen_string_literal: true

module LeaseMachines
  class Store
    # One entry of a store's event log (Store#events), written in the transaction of the request it records:
    #
    # - +id+: Integer, rising with every event, taken when it is written (see Store#events for when that is not
    #   commit order: a fenced write's event inside an application's PostgreSQL transaction).
    # - +resource+ (String) and +slot+ (Integer: 0 for the resource's lease, 1 to 1023 for a semaphore's slots).
    # - +kind+: one of KINDS. The accepted changes, as the core names them: +:acquired+ (a grant where no lease was
    #   live; a takeover when +replaced+ is another owner's expired lease), +:reacquired+ (the holder rotated its
    #   live lease to a new token), +:renewed+, +:released+, +:transferred+, and +:revoked+ (Store#revoke: the
    #   holder's release, made by an operator). Then +:refused+ (a request refused: +reason+ says why, +owner+ and
    #   +token+ are who asked and the token presented), +:write_accepted+ (a fenced write with +token+ committed;
    #   +highest+ is the mark it left) and +:write_refused+ (refused for +reason+; +highest+ is the fence's mark then).
    # - +at+: Float seconds, the instant the request was decided at (the store's clock, or its +now:+).
    # - +owner+, +token+, +expires_at+: the lease after the change (for a release or revocation, the lease that
    #   ended); nil where the event has none.
    # - +revision+: the lease row's revision after an accepted change, else nil.
    # - +reason+: a Symbol (Decision's REASONS) for +:refused+ and +:write_refused+, else nil.
    # - +replaced+: the Lease the change replaced (the expired lease a takeover took over, the renewed or rotated
    #   lease as it was), else nil.
    # - +highest+: a fenced write's fence mark, else nil.
    Event = Data.define(:id, :resource, :slot, :kind, :at, :owner, :token, :expires_at, :revision, :reason,
                        :replaced, :highest) do
      # The accepted changes, in the order a lease goes through them: the core's kinds of change
      # (LeaseMachines::Event.kinds), but reaped, which no store does, and with revoked, an operator's release.
      const_set(:CHANGES, (LeaseMachines::Event.kinds - %i[reaped] + %i[revoked]).freeze)
      # The same, as the SQL list of the kind column's values the adapters read the audit's events by.
      const_set(:CHANGES_SQL, self::CHANGES.map { "'#{_1}'" }.join(", ").freeze)
      # Every kind an event has.
      const_set(:KINDS, (self::CHANGES + %i[refused write_accepted write_refused]).freeze)

      # The event of a row of the log: [id, resource, slot, kind, at, owner, token, expires_at, revision, reason,
      # replaced_owner, replaced_token, replaced_expires_at, highest].
      def self.from_row(row)
        id, resource, slot, kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token,
          replaced_expires_at, highest = row
        replaced = replaced_token && Lease.new(owner: replaced_owner, token: replaced_token,
                                               expires_at: replaced_expires_at)
        new(id: id, resource: resource, slot: slot, kind: kind.to_sym, at: at, owner: owner, token: token,
            expires_at: expires_at, revision: revision, reason: reason&.to_sym, replaced: replaced, highest: highest)
      end

      # Whether the event is an accepted change (CHANGES).
      def change? = self.class::CHANGES.include?(kind)

      # Whether the event is a grant that took over another owner's expired lease.
      def takeover? = kind == :acquired && !replaced.nil? && replaced.owner != owner
    end
  end
end
