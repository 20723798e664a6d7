# frozen_string_literal: true

require_relative "support/web_support"
require "cgi"

# The resources page (/) and its JSON (/resources.json): every lease row with its holder, token, fence high-water,
# state and time left at the store's clock; paged by key, filtered by prefix; the JSON the page polls carries the same
# rows.
class ResourcesPageTest < Minitest::Test
  include LeaseMachines::WebSupport

  def test_the_rows_show_holder_token_fence_and_state_at_the_stores_clock
    grant("held", 7, ttl: 60.0)
    grant("expiring", 8, ttl: 3.0)
    lease = grant("fenced", 9, ttl: 30.0)
    @store.fenced(resource: "fenced", token: lease.token, now: @time) { nil }
    freed = grant("free", 10, ttl: 30.0)
    @store.release(resource: "free", owner: 10, token: freed.token, now: @time)
    grant("lapsed", 11, ttl: 1.0)
    @time += 1.5

    get "/"
    assert_equal 200, status
    assert_equal "text/html; charset=utf-8", last_response.headers["content-type"]
    assert_equal [["0:expiring", "expiring", "0", "8", "1", "—", "expiring", "1.5 s"],
                  ["0:fenced", "fenced", "0", "9", "1", "1", "held", "28.5 s"],
                  ["0:free", "free", "0", "—", "—", "—", "free", "—"],
                  ["0:held", "held", "0", "7", "1", "—", "held", "58.5 s"],
                  ["0:lapsed", "lapsed", "0", "—", "—", "—", "free", "—"]], table_rows
    assert_includes body, %(<span class="count">5</span> leases)
    assert_includes body, %(data-now="#{@time}")
    assert_equal ["#{EVENING + 3.0}", "#{EVENING + 30.0}", "#{EVENING + 60.0}"], attributes("td", "data-expires-at")
  end

  def test_the_json_carries_the_rows_the_page_shows
    grant("a", 7, ttl: 60.0)
    grant("b", 8, ttl: 4.0)
    @store.acquire(resource: "pool", owner: 1, ttl: 60.0, now: @time, limit: 2)
    @store.acquire(resource: "pool", owner: 2, ttl: 60.0, now: @time, limit: 2)

    get "/resources.json"
    assert_equal "application/json; charset=utf-8", last_response.headers["content-type"]
    document = json
    assert_equal [@time, 4, nil], document.values_at(:now, :count, :next)
    assert_equal [
      { key: "0:a", resource: "a", slot: 0, owner: 7, token: 1, highest: nil, state: "held",
        expires_at: EVENING + 60.0, remaining: 60.0 },
      { key: "0:b", resource: "b", slot: 0, owner: 8, token: 1, highest: nil, state: "expiring",
        expires_at: EVENING + 4.0, remaining: 4.0 },
      { key: "0:pool", resource: "pool", slot: 0, owner: 1, token: 1, highest: nil, state: "held",
        expires_at: EVENING + 60.0, remaining: 60.0 },
      { key: "1:pool", resource: "pool", slot: 1, owner: 2, token: 1, highest: nil, state: "held",
        expires_at: EVENING + 60.0, remaining: 60.0 }
    ], document[:rows]
  end

  # 120 resources, walked page by page with the Next link: every one exactly once, in key order, with the page size
  # kept, and the last page without a Next link.
  def test_next_links_walk_every_resource_once_in_key_order
    names = (1..120).map { format("job-%03d", _1) }
    names.shuffle(random: Random.new(7)).each { grant(_1, 1) }
    seen = []
    path = "/?limit=25"
    pages = 0
    while path
      get path
      assert_equal 200, status, body
      rows = table_rows
      assert_operator rows.size, :<=, 25
      seen.concat(rows.map { _1[1] })
      pages += 1
      path = body[/<a rel="next" href="([^"]*)"/, 1]&.then { CGI.unescapeHTML(_1) }
      assert_includes path, "limit=25" if path
    end
    assert_equal names, seen
    assert_equal 5, pages, "4 full pages and 20 rows"
    assert_includes body, "First page"
  end

  def test_the_json_pages_by_key_like_the_page
    %w[a b c].each { grant(_1, 1) }
    get "/resources.json?limit=2"
    assert_equal ["a", "b", "0:b"], json[:rows].map { _1[:resource] } + [json[:next]]
    get "/resources.json?limit=2&after=#{CGI.escape(json[:next])}"
    assert_equal [["c"], nil], [json[:rows].map { _1[:resource] }, json[:next]]
  end

  def test_a_prefix_shows_only_its_resources_and_counts_them
    %w[billing/a billing/b billing-x reports/a].each { grant(_1, 1) }
    get "/?prefix=billing%2F"
    assert_equal %w[billing/a billing/b], table_rows.map { _1[1] }
    assert_includes body, %(<span class="count">2</span> leases of resources named billing/…)
    assert_includes body, %(<input name="prefix" value="billing/">)
    get "/resources.json?prefix=reports"
    assert_equal [1, ["reports/a"]], [json[:count], json[:rows].map { _1[:resource] }]
  end

  def test_hostile_names_are_escaped_everywhere_and_their_links_round_trip
    HOSTILE.each { grant(_1, 1) }
    get "/"
    assert_equal HOSTILE.sort, table_rows.map { _1[1] }.sort, "each name shown as text, as it is"
    refute_includes body, "<script>alert"
    refute_includes body, %("onmouseover)
    assert_includes body, "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert_equal 1, body.scan("<script").size, "the page's own script only"
    links = attributes("a", "href").select { _1.start_with?("/resource?") }
    assert_equal HOSTILE.size, links.size
    links.each do |link|
      get link
      assert_equal 200, status, link
      name = Rack::Utils.parse_query(link.split("?", 2).last)["name"]
      assert_includes HOSTILE, name
      assert_includes body, "<h1>#{CGI.escapeHTML(name)} · slot 0</h1>"
    end
  end

  def test_durations_are_written_for_people_to_the_tenth_below_an_hour
    assert_equal ["—", "0.0 s", "1.5 s", "59.9 s", "1 min 00.0 s", "1 min 01.3 s", "4 min 59.3 s", "1 h 00 min 00 s",
                  "1 h 01 min 01 s", "1 d 01 h 01 min"],
                 [nil, 0.04, 1.5, 59.94, 59.96, 61.25, 299.3, 3599.96, 3661.0, 90_061.5].map {
                   LeaseMachines::Web::View.duration(_1)
                 }
  end

  def test_an_empty_store_says_so
    get "/"
    assert_equal [], table_rows
    assert_includes body, %(<p class="empty">No leases here.</p>)
    assert_includes body, %(<span class="count">0</span> leases)
    refute_includes body, %(rel="next")
  end

  def test_mounted_below_a_path_every_link_keeps_it
    grant("a/b", 1)
    get "/leases/", {}, "SCRIPT_NAME" => "/leases", "PATH_INFO" => "/"
    hrefs = attributes("a", "href")
    assert_includes hrefs, "/leases/resource?name=a%2Fb&slot=0"
    assert_equal %w[/leases/ /leases/audit /leases/metrics], hrefs.first(3)
    assert_includes attributes("section", "data-poll-url"), "/leases/resources.json"
  end
end
