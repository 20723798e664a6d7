# frozen_string_literal: true

require "test_helper"
require "cgi"
require "json"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3

# The dashboard needs rack (and its tests rack-test), the Gemfile's :web group: a Ruby without them skips these tests.
LEASE_MACHINES_WEB = begin
  require "rack/test"
  require "rexml/document"
  require "lease_machines/web"
  true
rescue LoadError
  false
end

module LeaseMachines
  # What the dashboard's tests share: a real SQLite store in a scratch directory, on a clock the test moves (+@time+,
  # Float seconds), whose events come from real requests; the app under test behind Rack::Lint (every response is
  # checked against the Rack 3 specification), driven by Rack::Test; and readers of what it answered.
  module WebSupport
    include TestSupport
    include Rack::Test::Methods if LEASE_MACHINES_WEB

    # Runs the block with +object+'s method +name+ answering +value+, then puts the method back (what minitest/mock's
    # stub does; minitest 6 moved that into a gem of its own, which not every Ruby the suite runs on has).
    def answering(object, name, value)
      original = object.method(name)
      object.define_singleton_method(name) { |*| value }
      yield
    ensure
      object.define_singleton_method(name, original) if original
    end

    # The instant the stories start at: 2026-12-01 22:00:00 UTC.
    EVENING = Time.utc(2026, 12, 1, 22).to_f
    # Hostile resource names: markup, an attribute breaker, URL syntax, a quote, Unicode (and a name that looks like
    # a page key).
    HOSTILE = ["<script>alert(1)</script>", "\"onmouseover=alert(1) x=\"", "a/b?c#d&e=f", "it's", "сон 🌙 ☃",
               "0:x", "&amp;"].freeze

    def setup
      skip "rack and rack-test are not installed for this Ruby" unless LEASE_MACHINES_WEB
      requires_sqlite3!
      @time = EVENING
      @path = File.join(scratch_dir("lm-web"), "leases.sqlite3")
      @store = Store.new(@path, clock: -> { @time })
    end

    def teardown
      @web&.close
      @store&.close
      super
    end

    # What the test's app is built with (a test overrides it, or sets @options before the first request).
    def web_options = @options || {}

    # The dashboard under test (Rack::Test's app), behind Rack::Lint.
    def app = @app ||= Rack::Lint.new(@web = Web.new(store: @store, **web_options))

    # A lease of +ttl+ seconds on +resource+ to +owner+, granted at the store's clock (now: @time); its Lease.
    def grant(resource, owner, ttl: 60.0, slot_limit: nil)
      decision = @store.acquire(resource: resource, owner: owner, ttl: ttl, now: @time, limit: slot_limit)
      granted(decision)
    end

    # Worker 7's night on +resource+: tokens 1 to 32 went to the evening's workers (owner 5, each released), then
    # worker 7 is granted token 33 (a lease of 10 s), renews it once and writes; it pauses, its lease expires, worker 9
    # takes over with token 34 and writes; worker 7 wakes and its write with token 33 is refused. Returns the id of
    # the last event before the night (the page's +after+ that shows the night alone).
    def worker_sevens_night(resource = "nightly-report")
      32.times do |i|
        lease = granted(@store.acquire(resource: resource, owner: 5, ttl: 30.0, now: EVENING + i))
        @store.release(resource: resource, owner: 5, token: lease.token, now: EVENING + i + 0.5)
      end
      before = @store.events(resource: resource, limit: 1000).last.id
      night = EVENING + 3600.0
      assert_equal 33, granted(@store.acquire(resource: resource, owner: 7, ttl: 10.0, now: night)).token
      assert_equal :renewed, @store.renew(resource: resource, owner: 7, token: 33, ttl: 10.0, now: night + 5).status
      @store.fenced(resource: resource, token: 33, now: night + 6) { nil }
      # Worker 7 pauses (a GC, a VM migration) past night + 15, when its renewed lease runs out.
      assert_equal 34, granted(@store.acquire(resource: resource, owner: 9, ttl: 10.0, now: night + 20)).token
      @store.fenced(resource: resource, token: 34, now: night + 21) { nil }
      error = assert_raises(Fenced) { @store.fenced(resource: resource, token: 33, now: night + 22) { flunk "wrote" } }
      assert_equal :stale_token, error.reason
      @time = night + 23
      before
    end

    # Takes event +id+'s row out of the log, as though its transaction had not committed yet (on PostgreSQL an
    # event's id is taken when it is written, and a fenced write inside an application's transaction commits later);
    # returns a lambda that puts it back, as the commit would.
    def hold_back_event(id)
      row = nil
      SQLite3::Database.new(@path) do |db|
        row = db.execute("SELECT * FROM lease_machines_events WHERE id = ?", [id]).first
        db.execute("DELETE FROM lease_machines_events WHERE id = ?", [id])
      end
      lambda do
        SQLite3::Database.new(@path) do |db|
          db.execute("INSERT INTO lease_machines_events VALUES (#{(["?"] * row.size).join(", ")})", row)
        end
      end
    end

    def body = last_response.body
    def status = last_response.status

    # The response's JSON, with Symbol keys.
    def json = JSON.parse(body, symbolize_names: true)

    # The nonce the response's Content-Security-Policy names (for scripts and styles alike), asserting the policy.
    def policy_nonce
      policy = last_response.headers["content-security-policy"]
      match = /\Adefault-src 'none'; script-src 'nonce-([A-Za-z0-9+\/=]{24})'; style-src 'nonce-\1'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'\z/.match(policy)
      assert match, "the policy: #{policy.inspect}"
      match[1]
    end

    # The +attribute+ values of the elements of +tag+ in the body, in order, unescaped (as a browser reads them).
    def attributes(tag, attribute)
      body.scan(/<#{tag}\b[^>]*?\s#{attribute}="([^"]*)"/).flatten.map { CGI.unescapeHTML(_1) }
    end

    # The table rows of the resources table: [key, resource, slot, owner, token, highest, state, time left] each, as
    # the cells' text reads.
    def table_rows
      body.scan(%r{<tr class="state-(\w+)" data-key="([^"]*)">(.*?)</tr>}m).map do |state, key, cells|
        fields = cells.scan(%r{<td data-field="(\w+)"[^>]*>(.*?)</td>}m).to_h
        [CGI.unescapeHTML(key), CGI.unescapeHTML(fields["resource"].gsub(/<[^>]+>/, "")), fields["slot"],
         fields["owner"], fields["token"], fields["highest"], state, fields["remaining"]]
      end
    end

    # The body read as XML (an SVG image): REXML raises REXML::ParseException unless it is well-formed.
    def svg_document = REXML::Document.new(body)

    # The elements of +document+ that +xpath+ finds.
    def elements(document, xpath) = REXML::XPath.match(document, xpath)
  end
end
