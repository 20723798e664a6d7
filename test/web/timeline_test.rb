# frozen_string_literal: true

require_relative "support/web_support"

# A resource's page (/resource), its timeline (/resource.svg) and its JSON (/resource.json): the holders over time
# drawn from the store's event log, so that worker 7's night reads at a glance, and the events below it.
class TimelineTest < Minitest::Test
  include LeaseMachines::WebSupport

  R = "nightly-report"
  NIGHT = EVENING + 3600.0

  # The grants the SVG draws: [owner, token, ending, from, to] each, in order.
  def grants(document)
    elements(document, "//g[@class='grant']").map do |g|
      a = g.attributes
      [Integer(a["data-owner"]), Integer(a["data-token"]), a["data-ending"], Float(a["data-from"]), Float(a["data-to"])]
    end
  end

  # The y of +owner+'s lane.
  def lane_y(document, owner)
    lane = elements(document, "//g[@class='lane'][@data-owner='#{owner}']/line").first
    Float(lane.attributes["y1"])
  end

  def test_worker_sevens_night_reads_at_a_glance
    before = worker_sevens_night(R)
    get "/resource.svg?name=#{R}&after=#{before}"
    assert_equal 200, status, body
    assert_equal "image/svg+xml; charset=utf-8", last_response.headers["content-type"]
    svg = svg_document

    assert_equal %w[owner\ 7 owner\ 9], elements(svg, "//text[@class='lane-label']").map(&:text)
    assert_equal [[7, 33, "expired", NIGHT, NIGHT + 15.0], [9, 34, "open", NIGHT + 20.0, NIGHT + 30.0]], grants(svg)
    labels = elements(svg, "//g[@class='grant']/text[@class='bar-label']").map(&:text)
    assert_equal ["token 33", "token 34 · took over"], labels
    assert_equal ["expired", "until 23:00:30.000 →"], elements(svg, "//g[@class='grant']/text[@class='bar-end']").map(&:text)

    # Its renewal at night + 5 is a tick on token 33's bar.
    renewals = elements(svg, "//g[@data-token='33']/line[@class='renewal']")
    assert_equal ["renewed at 2026-12-01 23:00:05.000 UTC"], renewals.map { _1.elements["title"].text }

    # Each write on the lane of its token's owner: accepted (33 before the pause, 34 after the takeover), then
    # token 33's refused, a red cross on worker 7's lane, after worker 9's bar began.
    accepted = elements(svg, "//circle[@class='write-accepted']")
    assert_equal [%w[33 7], %w[34 9]], accepted.map { [_1.attributes["data-token"], _1.attributes["data-owner"]] }
    assert_equal [lane_y(svg, 7), lane_y(svg, 9)], accepted.map { Float(_1.attributes["cy"]) }
    refused = elements(svg, "//g[@class='write-refused']")
    assert_equal 1, refused.size
    mark = refused.first
    assert_equal %w[33 7], [mark.attributes["data-token"], mark.attributes["data-owner"]]
    assert_equal "token 33 refused", mark.elements["text"].text
    assert_equal "write with token 33 refused at 2026-12-01 23:00:22.000 UTC: stale_token (fence mark 34)",
                 mark.elements["title"].text
    cross_x = Float(mark.elements["path"].attributes["d"][/\AM([\d.]+)/, 1]) + 6
    seven = elements(svg, "//g[@data-token='33']/rect").first
    nine = elements(svg, "//g[@data-token='34']/rect").first
    assert_operator cross_x, :>, Float(nine.attributes["x"]), "refused after worker 9 took over"
    assert_operator cross_x, :>, Float(seven.attributes["x"]) + Float(seven.attributes["width"]), "after 33 expired"
    assert_equal lane_y(svg, 7), Float(mark.elements["text"].attributes["y"]) - 22
  end

  def test_the_whole_history_has_a_lane_for_the_evenings_worker_too
    worker_sevens_night(R)
    get "/resource.svg?name=#{R}"
    svg = svg_document
    assert_equal ["owner 5", "owner 7", "owner 9"], elements(svg, "//text[@class='lane-label']").map(&:text)
    drawn = grants(svg)
    assert_equal 34, drawn.size
    assert_equal [5, 1, "released", EVENING, EVENING + 0.5], drawn.first
    assert_equal (1..34).to_a, drawn.map { _1[1] }
  end

  def test_the_page_shows_the_slots_the_timeline_and_the_events
    before = worker_sevens_night(R)
    get "/resource?name=#{R}&after=#{before}"
    assert_equal 200, status
    assert_equal [["0:#{R}", R, "0", "9", "34", "34", "held", "7.0 s"]], table_rows
    assert_includes body, %(<div class="timeline"><svg xmlns="http://www.w3.org/2000/svg" class="timeline-svg")
    rows = body.scan(%r{<tr class="kind-(\w+)" data-id="(\d+)">(.*?)</tr>}m)
    assert_equal %w[acquired renewed write_accepted acquired write_accepted write_refused], rows.map(&:first)
    assert_equal ((before + 1)..(before + 6)).map(&:to_s), rows.map { _1[1] }
    takeover = rows[3][2].scan(%r{<td>(.*?)</td>}).flatten
    assert_equal [(before + 4).to_s, "2026-12-01 23:00:20.000 UTC", "0", "acquired", "9", "34",
                  "2026-12-01 23:00:30.000 UTC", "#{(32 * 2) + 3}", "—", "—",
                  "took over owner 7&#39;s expired lease (token 33, expired 2026-12-01 23:00:15.000 UTC)"], takeover
    refused = rows[5][2].scan(%r{<td>(.*?)</td>}).flatten
    assert_equal ["write_refused", "—", "33", "34", "stale_token"], refused.values_at(3, 4, 5, 8, 9)
    assert_equal [["page", "/resource.svg?name=#{R}&after=#{before}"]],
                 attributes("section", "data-events").zip(attributes("section", "data-svg-url")),
                 "a page of history, not followed"
  end

  def test_the_json_carries_the_events_after_an_id_and_the_slots
    before = worker_sevens_night(R)
    get "/resource.json?name=#{R}&after=#{before + 4}"
    assert_equal "application/json; charset=utf-8", last_response.headers["content-type"]
    document = json
    assert_equal [@time, R, before + 6], document.values_at(:now, :resource, :last_id)
    assert_equal [[9, 34, "held"]], document[:rows].map { _1.values_at(:owner, :token, :state) }
    written, refused = document[:events]
    assert_equal({ id: before + 5, resource: R, slot: 0, kind: "write_accepted", at: NIGHT + 21, owner: nil, token: 34,
                   expires_at: nil, revision: nil, highest: 34, reason: nil, takeover: false, replaced: nil },
                 written.except(:cells))
    assert_equal [(before + 6).to_s, "write_refused", "33", "34", "stale_token", "write with token 33 refused: stale_token"],
                 refused[:cells].values_at(0, 3, 5, 8, 9, 10)
    get "/resource.json?name=#{R}&after=#{before + 6}"
    assert_equal [[], before + 6], [json[:events], json[:last_id]], "nothing new: the poll keeps its place"
  end

  def test_a_release_a_transfer_and_a_revoke_end_their_bars
    grant("r", 1, ttl: 30.0)
    @store.transfer(resource: "r", owner: 1, token: 1, new_owner: 2, ttl: 30.0, now: @time + 1)
    @store.release(resource: "r", owner: 2, token: 2, now: @time + 2)
    @store.acquire(resource: "r", owner: 3, ttl: 30.0, now: @time + 3)
    @store.revoke(resource: "r", now: @time + 4)
    @store.acquire(resource: "r", owner: 4, ttl: 30.0, now: @time + 5)
    @store.reacquire(resource: "r", owner: 4, ttl: 30.0, now: @time + 6)
    get "/resource.svg?name=r"
    t = EVENING
    assert_equal [[1, 1, "transferred", t, t + 1], [2, 2, "released", t + 1, t + 2], [3, 3, "revoked", t + 3, t + 4],
                  [4, 4, "reacquired", t + 5, t + 6], [4, 5, "open", t + 6, t + 36]], grants(svg_document)
  end

  def test_a_slot_shows_only_its_events_and_refused_requests_are_marked
    @store.acquire(resource: "pool", owner: 1, ttl: 30.0, now: @time, limit: 2)
    @store.acquire(resource: "pool", owner: 2, ttl: 30.0, now: @time + 1, limit: 2)
    assert_equal :occupied, @store.acquire(resource: "pool", owner: 3, ttl: 30.0, now: @time + 2, limit: 2).reason
    get "/resource.svg?name=pool&slot=1"
    svg = svg_document
    assert_equal [[2, 1, "open", EVENING + 1, EVENING + 31]], grants(svg)
    get "/resource.svg?name=pool"
    svg = svg_document
    assert_equal [[1, 0], [2, 1]], elements(svg, "//g[@class='grant']").map { [Integer(_1.attributes["data-owner"]), Integer(_1.attributes["data-slot"])] }
    diamond = elements(svg, "//path[@class='request-refused']")
    assert_equal ["3"], diamond.map { _1.attributes["data-owner"] }
    assert_match(/\Arequest refused at 2026-12-01 22:00:02\.000 UTC: occupied\z/, diamond.first.elements["title"].text)
    get "/resource?name=pool"
    assert_equal [["0:pool", "pool", "0", "1", "1", "—", "held"], ["1:pool", "pool", "1", "2", "1", "—", "held"]],
                 table_rows.map { _1.first(7) }
  end

  def test_a_hostile_name_is_escaped_in_the_svg_and_the_page
    LeaseMachines::WebSupport::HOSTILE.each do |name|
      grant(name, 1)
      get "/resource.svg?name=#{CGI.escape(name)}"
      svg = svg_document # well-formed whatever the name
      assert_equal ["token 1"], elements(svg, "//text[@class='bar-label']").map(&:text)
      get "/resource?name=#{CGI.escape(name)}"
      assert_includes body, "<h1>#{CGI.escapeHTML(name)}</h1>"
      assert_includes body, "<title>#{CGI.escapeHTML(name)} · lease_machines</title>"
      assert_equal 1, body.scan("<script").size
    end
  end

  # Far out, Floats are far apart (16 s at 1e17 s): a lease whose events all fall on one instant still gets a scale,
  # and its bar is drawn where it belongs.
  def test_a_lease_at_1e17_seconds_is_drawn
    @store.acquire(resource: "far", owner: 1, ttl: 10.0, now: 1e17)
    @store.renew(resource: "far", owner: 1, token: 1, ttl: 10.0, now: 1e17 + 1)
    get "/resource.svg?name=far"
    assert_equal 200, status, body
    svg = svg_document
    assert_equal [[1, 1, "open", 1e17, 1e17 + 16]], grants(svg)
    rect = elements(svg, "//g[@class='grant']/rect").first
    assert_operator Float(rect.attributes["x"]), :<, 300.0, "the bar starts near the axis' start"
    assert_operator Float(rect.attributes["width"]), :>, 300.0, "and spans its 16 s"
    get "/resource?name=far"
    assert_equal 200, status
  end

  # Instants no scale can span (the largest Floats, infinity) are drawn at the ends of the axis, never an exception.
  def test_a_span_that_is_not_finite_is_drawn_at_the_ends
    view = LeaseMachines::Web::View.new(base: "", nonce: "n", poll_every: 2.0, actions: false)
    [[Float::MAX, Float::MAX], [-Float::MAX, Float::MAX], [0.0, Float::INFINITY], [1e17, 1e17]].each do |from, to|
      events = [[1, :acquired, from], [2, :released, to]].map do |id, kind, at|
        LeaseMachines::Store::Event.new(id: id, resource: "r", slot: 0, kind: kind, at: at, owner: 1, token: 1,
                                        expires_at: to, revision: id, reason: nil, replaced: nil, highest: nil)
      end
      timeline = LeaseMachines::Web::Timeline.new(events)
      svg = REXML::Document.new(LeaseMachines::Web::TimelineSvg.new(view, timeline).to_s)
      xs = elements(svg, "//rect | //line").flat_map { |e| %w[x x1 x2].filter_map { e.attributes[_1] } }
      xs = xs.map { Float(_1) }
      refute_empty xs
      assert xs.all? { (130.0..930.0).cover?(_1) }, "#{[from, to].inspect}: #{xs.inspect}"
    end
  end

  def test_a_resource_without_events_draws_an_empty_timeline
    get "/resource.svg?name=never"
    assert_equal ["No events yet."], elements(svg_document, "//text").map(&:text).last(1)
    get "/resource?name=never"
    assert_equal 200, status
    assert_equal [], table_rows
  end

  # The page shows the newest events; older ones are read forward from the oldest the log keeps, page by page.
  def test_a_full_page_links_to_older_events_and_those_page_forward
    5.times { |i| @store.reacquire(resource: "r", owner: 1, ttl: 30.0, now: @time + i) }
    links = lambda do
      body.scan(/<a rel="(\w+)" href="([^"]*)">([^<]*)</).map { |rel, href, label| [rel, CGI.unescapeHTML(href), label] }
    end
    get "/resource?name=r&limit=2"
    assert_equal %w[4 5], body.scan(/data-id="(\d+)"/).flatten
    assert_equal [["first", "/resource?name=r&after=0&limit=2", "Older events, from the oldest kept"]], links.()
    pages = []
    path = links.().first[1]
    while path
      get path
      pages << body.scan(/data-id="(\d+)"/).flatten
      path = links.().find { _1.first == "next" }&.at(1)
    end
    assert_equal [%w[1 2], %w[3 4], %w[5]], pages
    assert_equal [["last", "/resource?name=r&limit=2", "Newest events"]], links.()
    get "/resource?name=r"
    assert_equal %w[1 2 3 4 5], body.scan(/data-id="(\d+)"/).flatten
    assert_empty links.(), "every event on the page"
  end

  # 700 renewals, a release and a new holder: the page and its timeline show the newest events, so the new holder,
  # and the renewed lease (granted before them) as a bar from their start to its release.
  def test_the_page_and_the_timeline_show_the_newest_events
    lease = grant("r", 7, ttl: 30.0)
    700.times { |i| @store.renew(resource: "r", owner: 7, token: lease.token, ttl: 30.0, now: @time + i + 1) }
    @store.release(resource: "r", owner: 7, token: lease.token, now: @time + 701)
    assert_equal 2, granted(@store.acquire(resource: "r", owner: 99, ttl: 30.0, now: @time + 702)).token
    last = @store.latest_events(resource: "r", limit: 1).first
    @time += 702
    get "/resource?name=r"
    assert_equal 200, status
    ids = body.scan(/<tr class="kind-\w+" data-id="(\d+)">/).flatten.map { Integer(_1) }
    assert_equal ((last.id - 499)..last.id).to_a, ids, "the newest 500, oldest first"
    assert_equal [["0:r", "r", "0", "99", "2", "—", "held", "30.0 s"]], table_rows
    assert_equal [["newest", "/resource.json?name=r", "/resource.svg?name=r"]],
                 attributes("section", "data-events").zip(attributes("section", "data-poll-url"),
                                                          attributes("section", "data-svg-url"))
    inline = body[%r{<svg .*?</svg>}m]
    get "/resource.svg?name=r"
    assert_equal inline, body.chomp, "the page's timeline is the one the page refreshes"
    svg = svg_document
    assert_equal ["owner 7", "owner 99"], elements(svg, "//text[@class='lane-label']").map(&:text)
    first = EVENING + 203
    assert_equal [[7, 1, "released", first, EVENING + 701], [99, 2, "open", EVENING + 702, EVENING + 732]], grants(svg)
    assert_equal ["token 1 · granted earlier", "token 2"], elements(svg, "//text[@class='bar-label']").map(&:text)
    assert_equal ["true", nil], elements(svg, "//g[@class='grant']").map { _1.attributes["data-earlier"] }
    assert_equal 498, elements(svg, "//g[@data-token='1']/line[@class='renewal']").size
    assert_equal "token 1 to owner 7: granted before 2026-12-01 22:03:23.000 UTC to 2026-12-01 22:11:41.000 UTC, " \
                 "released", elements(svg, "//g[@data-token='1']/title").first.text
  end

  # The page polls the newest events again each time (not only the ids above the last one seen), so an event that
  # commits after one with a greater id (on PostgreSQL, a fenced write inside an application's transaction takes its
  # id early) is in the next poll's JSON, in id order.
  def test_the_poll_reads_the_newest_events_again_and_catches_a_late_commit
    6.times { |i| @store.reacquire(resource: "r", owner: 1, ttl: 30.0, now: @time + i) }
    late = @store.events(resource: "r")[4]
    commit = hold_back_event(late.id)
    get "/resource?name=r&limit=3"
    assert_equal %w[3 4 6], body.scan(/data-id="(\d+)"/).flatten
    poll = attributes("section", "data-poll-url").first
    assert_equal "/resource.json?name=r&limit=3", poll
    get poll
    assert_equal [3, 4, 6], json[:events].map { _1[:id] }
    commit.()
    get poll
    assert_equal [4, 5, 6], json[:events].map { _1[:id] }, "the late event, in its place"
    assert_equal [%w[5 reacquired]], json[:events].select { _1[:id] == late.id }.map { _1[:cells].values_at(0, 3) }
  end
end
