# frozen_string_literal: true

module LeaseMachines
  class Web
    # The resources page (/) and its JSON (/resources.json, what the page polls), on the same parameters:
    #
    # - +prefix+: only the resources whose names start with it;
    # - +after+: the key of the last row of the page before (PageKey), as the Next link writes it;
    # - +limit+: rows per page, 1 to MAX_LIMIT (default DEFAULT_LIMIT).
    #
    # One page is one keyset query (Store#resources, one row more than the page, to know whether a next page
    # exists), the resource count one more, and the store's clock: at 100,000 resources a page reads what it shows
    # and no more.
    class ResourcesPage
      DEFAULT_LIMIT = 50
      MAX_LIMIT = 500

      attr_reader :rows, :count, :now, :database

      # Checks +params+ (Params); raises BadRequest for a bad one.
      def initialize(params, expiring_within)
        @prefix = params.string("prefix")
        @after = params.page_key("after")
        @limit = params.integer("limit", 1..MAX_LIMIT, default: DEFAULT_LIMIT)
        @expiring_within = expiring_within
      end

      # Reads the page from +store+; returns self.
      def read(store)
        @now = store.now
        states = store.resources(after: @after, limit: @limit + 1, prefix: @prefix)
        @more = states.size > @limit
        @rows = states.first(@limit).map { Row.at(_1, @now, @expiring_within) }
        @count = store.resource_count(prefix: @prefix)
        @database = store.path
        self
      end

      # The key of the next page's +after+ (PageKey), nil on the last page.
      def next_key = @more ? @rows.last.key : nil

      def json = { now: @now, count: @count, next: next_key, rows: @rows.map(&:to_h) }

      def html(view)
        Layout.render(view, title: "Resources", database: @database, main: main(view))
      end

      private

      def main(view)
        v = view
        params = { prefix: @prefix, after: @after && PageKey.encode(@after), limit: limit_param }
        section = v.start_tag("section", id: "resources", "data-poll-url": v.url("/resources.json", params),
                                         "data-poll-every": v.poll_every)
        named = @prefix ? "leases of resources named #{v.h(@prefix)}…" : "leases"
        <<~HTML
          #{section}
          <h1>Resources</h1>
          <form class="filter" method="get" action="#{v.h(v.url("/"))}">
          <label>Name starts with <input name="prefix" value="#{v.h(@prefix)}"></label>
          <label>Per page <input name="limit" type="number" min="1" max="#{MAX_LIMIT}" value="#{@limit}"></label>
          <button type="submit">Show</button>
          </form>
          <p><span class="count">#{@count}</span> #{named} (resources and semaphore slots) ·
          <span class="live-status">live, every #{v.poll_every} s</span></p>
          #{RowsTable.new(v, @rows, @now)}
          #{pages(v)}
          </section>
        HTML
      end

      def limit_param = @limit == DEFAULT_LIMIT ? nil : @limit

      def pages(view)
        links = []
        links << %(<a href="#{view.h(view.url("/", prefix: @prefix, limit: limit_param))}">First page</a>) if @after
        if next_key
          link = view.url("/", prefix: @prefix, after: next_key, limit: limit_param)
          links << %(<a rel="next" href="#{view.h(link)}">Next</a>)
        end
        %(<nav class="pages">#{links.join(" ")}</nav>)
      end
    end
  end
end
