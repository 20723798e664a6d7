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
    assert_includes body, %(data-last-id="#{before + 6}")
    assert_includes body, %(data-svg-url="/resource.svg?name=#{R}&amp;after=#{before}")
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

  def test_a_resource_without_events_draws_an_empty_timeline
    get "/resource.svg?name=never"
    assert_equal ["No events yet."], elements(svg_document, "//text").map(&:text).last(1)
    get "/resource?name=never"
    assert_equal 200, status
    assert_equal [], table_rows
  end

  def test_a_full_page_of_events_links_to_the_later_ones
    5.times { |i| @store.reacquire(resource: "r", owner: 1, ttl: 30.0, now: @time + i) }
    get "/resource?name=r&limit=2"
    link = body[/<a rel="next" href="([^"]*)">Later events/, 1]
    assert_equal "/resource?name=r&after=2&limit=2", CGI.unescapeHTML(link)
    get CGI.unescapeHTML(link)
    assert_equal %w[3 4], body.scan(/data-id="(\d+)"/).flatten
    get "/resource?name=r"
    refute_includes body, "Later events"
  end
end
