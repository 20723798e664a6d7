# frozen_string_literal: true

module LeaseMachines
  class Web
    # A resource's page (/resource), its timeline alone (/resource.svg) and its JSON (/resource.json, what the page
    # polls), on the same parameters:
    #
    # - +name+: the resource (required; any UTF-8, percent-encoded in the link);
    # - +slot+: only that slot's events (0 is the plain lease; absent: every slot's);
    # - +after+: the events with a greater id, oldest first (an Integer; 0 from the oldest the log keeps; absent: the
    #   newest events, Store#latest_events);
    # - +limit+: at most this many events, 1 to MAX_LIMIT (default DEFAULT_LIMIT), of every slot (+slot+ then picks
    #   its own among them).
    #
    # Without +after+ the page is the resource's newest events and follows them: each poll reads the newest window
    # again and the script merges it into the table by id, so that an event that commits after one with a greater id
    # (on PostgreSQL, a fenced write inside an application's transaction takes its id when written, and commits
    # later) still lands in its place, where asking only for the ids above the last one seen would miss it for good.
    # With +after+ it is a page of the history, paged forward by id (Later events) and not followed.
    #
    # The timeline shows the events the store's log keeps: the newest of each lease (Store.new's keep_events:,
    # Store::KEEP_EVENTS by default, 1000) and none older than its events_max_age; older history is gone from the
    # store, not hidden here.
    #
    # Above the timeline, the resource's slots as the resources page shows them (with a Revoke button when actions
    # are on); below it, the events in a table. After a revoke, +revoked+ (or +not_held+) names the slot and
    # +token+ the token that was fenced, for the notice at the top.
    class ResourcePage
      DEFAULT_LIMIT = 500
      MAX_LIMIT = 1000
      # The greatest event id the +after+ parameter takes (the databases' signed 64-bit integers).
      MAX_EVENT_ID = (2**63) - 1
      COLUMNS = ["Id", "Time (UTC)", "Slot", "Kind", "Owner", "Token", "Expires at", "Revision", "Fence mark",
                 "Reason", "Note"].freeze

      attr_reader :events, :rows, :now

      def initialize(params, expiring_within)
        @name = params.resource("name")
        @slot = params.slot("slot")
        @after = params.integer("after", 0..MAX_EVENT_ID)
        @limit = params.integer("limit", 1..MAX_LIMIT, default: DEFAULT_LIMIT)
        @expiring_within = expiring_within
        @notice = Notice.new(params)
      end

      # Reads the events and the resource's slots from +store+; returns self.
      def read(store)
        @now = store.now
        events = if @after.nil?
                   store.latest_events(resource: @name, limit: @limit)
                 else
                   store.events(resource: @name, after: @after, limit: @limit)
                 end
        @full = events.size == @limit
        @last_id = events.last&.id || @after || 0
        @events = @slot.nil? ? events : events.select { _1.slot == @slot }
        states = store.resources(prefix: @name, limit: 1000).select { _1.resource == @name }
        @rows = states.map { Row.at(_1, @now, @expiring_within) }
        @database = store.path
        self
      end

      def json
        { now: @now, resource: @name, last_id: @last_id, rows: @rows.map(&:to_h),
          events: @events.map { |event| EventCells.to_h(event).merge(cells: EventCells.cells(event)) } }
      end

      def svg(view) = TimelineSvg.new(view, Timeline.new(@events)).to_s

      def html(view)
        Layout.render(view, title: @name, database: @database, main: main(view))
      end

      private

      def main(view)
        v = view
        poll = v.url("/resource.json", name: @name, slot: @slot, limit: limit_param)
        svg_url = v.url("/resource.svg", name: @name, slot: @slot, after: @after, limit: limit_param)
        section = v.start_tag("section", id: "timeline-page", "data-poll-url": poll, "data-poll-every": v.poll_every,
                                         "data-events": @after.nil? ? "newest" : "page", "data-limit": @limit,
                                         "data-svg-url": svg_url)
        <<~HTML
          #{section}
          <h1>#{v.h(@name)}#{" · slot #{@slot}" if @slot}</h1>
          #{@notice.html}
          <p><span class="live-status">live, every #{v.poll_every} s</span></p>
          #{RowsTable.new(v, @rows, @now)}
          <h2>Timeline</h2>
          <div class="timeline">#{svg(v)}</div>
          #{pages(v)}
          <h2>Events</h2>
          <table class="events">
          <thead><tr>#{COLUMNS.map { "<th>#{v.h(_1)}</th>" }.join}</tr></thead>
          <tbody>
          #{@events.map { event_row(v, _1) }.join("\n")}
          </tbody>
          </table>
          </section>
        HTML
      end

      def limit_param = @limit == DEFAULT_LIMIT ? nil : @limit

      def event_row(view, event)
        cells = EventCells.cells(event).map { "<td>#{view.h(_1)}</td>" }.join
        %(<tr class="kind-#{event.kind}" data-id="#{event.id}">#{cells}</tr>)
      end

      # The links to the other events. The newest page, when full, links to the oldest the log keeps (the store
      # pages forward by id only, so history is read from there on); a page of history to the next one when it is
      # full, and back to the newest.
      def pages(view)
        links = []
        if @after.nil?
          links << page_link(view, "first", "Older events, from the oldest kept", after: 0) if @full
        else
          links << page_link(view, "next", "Later events", after: @last_id) if @full
          links << page_link(view, "last", "Newest events")
        end
        links.empty? ? "" : %(<p class="pages">#{links.join(" ")}</p>)
      end

      def page_link(view, rel, label, after: nil)
        link = view.url("/resource", name: @name, slot: @slot, after: after, limit: limit_param)
        %(<a rel="#{rel}" href="#{view.h(link)}">#{label}</a>)
      end
    end
  end
end
