# frozen_string_literal: true

require_relative "support/web_support"

# The dashboard on a PostgreSQL store (a schema of its own in the suite's throwaway cluster): the same pages, the
# time left on the server's clock, keyset pages in the server's order, worker 7's night on the timeline.
class WebPostgreSQLTest < Minitest::Test
  include LeaseMachines::WebSupport

  def setup
    super
    @url = fresh_postgres_schema_url
    @store.close
    @store = LeaseMachines::Store.new(@url)
  end

  def test_the_pages_read_the_servers_clock
    @store.acquire(resource: "nightly-report", owner: 7, ttl: 600.0) # at the server's clock
    before = Process.clock_gettime(Process::CLOCK_REALTIME)
    get "/"
    assert_equal [["0:nightly-report", "nightly-report", "0", "7", "1", "—", "held"]], table_rows.map { _1.first(7) }
    now = Float(body[/data-now="([^"]+)"/, 1])
    assert_in_delta before, now, 5.0, "the server's clock, read with the page"
    assert_includes body, "Database: <code>#{CGI.escapeHTML(@store.path)}</code>"
    refute_match(/password/i, @store.path)
  end

  def test_pages_walk_every_resource_once_and_worker_sevens_night_is_drawn
    names = (1..30).map { format("job/%02d", _1) } + LeaseMachines::WebSupport::HOSTILE
    names.each { |name| @store.acquire(resource: name, owner: 1, ttl: 600.0) }
    seen = []
    path = "/?limit=7"
    while path
      get path
      assert_equal 200, status, body
      seen.concat(table_rows.map { _1[1] })
      path = body[/<a rel="next" href="([^"]*)"/, 1]&.then { CGI.unescapeHTML(_1) }
    end
    assert_equal names.sort, seen.sort, "every resource once"
    assert_equal seen.size, seen.uniq.size

    before = worker_sevens_night("nightly-report")
    get "/resource.svg?name=nightly-report&after=#{before}"
    svg = svg_document
    read = ->(xpath, names) { elements(svg, xpath).map { |element| names.map { element.attributes[_1] } } }
    assert_equal [%w[7 33 expired], %w[9 34 open]], read.("//g[@class='grant']", %w[data-owner data-token data-ending])
    assert_equal [%w[33 7]], read.("//g[@class='write-refused']", %w[data-token data-owner])
    get "/metrics"
    assert_match(/^lease_machines_events\{kind="write_refused"\} 1$/, body)
  end
end
