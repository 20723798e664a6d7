# frozen_string_literal: true

module LeaseMachines
  class Web
    # A resource's history drawn from its events (Store::Event, oldest first): one lane per owner, in the order
    # they first appear; a Bar from each grant to its end; and a Mark for each write and each refused request. The
    # drawing reads the events as they were recorded and decides nothing: a bar that no later event ended runs to
    # its lease's expires_at, the end the store recorded for it.
    #
    # How a grant ends:
    # - :released, :revoked, :transferred: at that event;
    # - :expired: a later grant in the same slot (a takeover, or a new grant after a quiet spell) found it expired,
    #   so it ended at its own expires_at (the replaced lease's, for a takeover);
    # - :reacquired: its owner took a new token while it was still live;
    # - :open: no later event ended it (it runs to expires_at, live or not).
    #
    # The events may begin in the middle of a lease (a page shows a resource's newest events; the log keeps each
    # lease's newest): a renewal or an end of a token whose grant is not among them, while no bar is open in its slot,
    # is a lease granted earlier, drawn from the first event on (+earlier+).
    class Timeline
      # One grant: +owner+, +token+, +slot+, from +from+ to +to+ (Float seconds since the Unix epoch), its
      # +ending+ (above), the instants of its +renewals+, +takeover+, whether it took over another owner's
      # expired lease, and +earlier+, whether it was granted before the first event (+from+ is that event's instant).
      Bar = Data.define(:owner, :token, :slot, :from, :to, :ending, :renewals, :takeover, :earlier)
      # A write (+:write_accepted+, +:write_refused+) or a refused request (+:refused+) at +at+, on +owner+'s lane
      # (for a write, the owner its token was granted to; nil when the token's grant is not among the events).
      Mark = Data.define(:kind, :at, :owner, :token, :slot, :reason, :highest, :event_id)

      GRANTS = %i[acquired reacquired transferred].freeze
      ENDS = { released: :released, revoked: :revoked }.freeze

      attr_reader :bars, :marks, :events

      # +events+: an Array of Store::Event of one resource, oldest first.
      def initialize(events)
        @events = events
        @bars = []
        @marks = []
        @open = {}     # slot => the bar being drawn (a Hash until it ends)
        @granted = {}  # [slot, token] => the bar of that grant
        events.each { |event| add(event) }
        @open.each_value { |bar| finish(bar, bar[:expires_at], :open) }
        @bars = @bars.map { |bar| Bar.new(**bar.except(:expires_at)) }.sort_by(&:from).freeze
        @marks.freeze
      end

      # The owners with a lane, in the order they first appear (nil: the marks of no known owner, such as a write
      # whose token's grant is older than the events, or a revoke refused for want of a lease).
      def lanes = (@bars.map(&:owner) + @marks.map(&:owner)).uniq

      # The instants the drawing spans, [from, to] (Float seconds): from the first event to the last, or to the end
      # of a bar that ended later. Nil without events.
      def span
        return nil if @events.empty?

        from = @events.first.at
        to = [@events.last.at, *@bars.reject { _1.ending == :open }.map(&:to)].max
        [from, to]
      end

      private

      def add(event)
        case event.kind
        when *GRANTS then grant(event)
        when :renewed then renew(event)
        when *ENDS.keys then stop(event)
        when :refused, :write_accepted, :write_refused then mark(event)
        end
      end

      def grant(event)
        previous = @open.delete(event.slot)
        if previous
          ending, at = ended_by(previous, event)
          finish(previous, at, ending)
        end
        start(event, from: event.at, takeover: event.takeover?, earlier: false)
      end

      # A bar for +event+'s lease, from +from+, open in its slot.
      def start(event, from:, takeover:, earlier:)
        bar = { owner: event.owner, token: event.token, slot: event.slot, from: from, to: nil, ending: nil,
                renewals: [], takeover: takeover, earlier: earlier, expires_at: event.expires_at }
        @bars << bar
        @open[event.slot] = @granted[[event.slot, event.token]] = bar
      end

      # The bar of +event+'s token: its grant's; or, for a token whose grant is older than the events, a bar from the
      # first event, when its slot has none open (nil otherwise: such a token's lease had already moved on).
      def granted(event)
        bar = @granted[[event.slot, event.token]]
        return bar if bar
        return nil unless @open[event.slot].nil? && event.owner

        start(event, from: @events.first.at, takeover: false, earlier: true)
      end

      # How +event+, a grant in +bar+'s slot, ended +bar+: a transfer at once; a takeover at the expiry of the lease
      # it replaced; a reacquire by the same owner at once unless the bar had already run out.
      def ended_by(bar, event)
        return [:transferred, event.at] if event.kind == :transferred

        expired_at = event.replaced&.expires_at || bar[:expires_at]
        return [:expired, expired_at] if event.takeover? || expired_at <= event.at

        [:reacquired, event.at]
      end

      def renew(event)
        bar = granted(event) or return

        bar[:renewals] << event.at
        bar[:expires_at] = event.expires_at
      end

      def stop(event)
        bar = granted(event) || @open[event.slot] or return
        return unless bar[:to].nil?

        @open.delete(event.slot) if @open[event.slot].equal?(bar)
        finish(bar, event.at, ENDS.fetch(event.kind))
      end

      def finish(bar, at, ending)
        bar[:to] = at
        bar[:ending] = ending
        bar[:renewals] = bar[:renewals].freeze
      end

      def mark(event)
        owner = @granted[[event.slot, event.token]]&.fetch(:owner) || event.owner
        @marks << Mark.new(kind: event.kind, at: event.at, owner: owner, token: event.token, slot: event.slot,
                           reason: event.reason, highest: event.highest, event_id: event.id)
      end
    end
  end
end
