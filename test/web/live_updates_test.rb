# frozen_string_literal: true

require_relative "support/web_support"
require "support/browser"

# The pages in a real browser (headless Chromium, test/support/browser.rb): the stylesheet and the script run under
# the nonce-based policy, the time left counts down without asking the server, the rows and the timeline follow the
# store through polling without a reload, and the Revoke button's POST passes the origin checks a browser's request
# carries.
class LiveUpdatesTest < Minitest::Test
  include LeaseMachines::WebSupport
  include LeaseMachines::TestSupport::Browser

  # A dashboard polling every 0.2 s, on stores of its own (WEBrick's threads each open one, on the test's clock),
  # beside the test's @store.
  def dashboard(**options)
    path = @path
    LeaseMachines::Web.new(store: -> { LeaseMachines::Store.new(path, clock: -> { @time }) }, poll_every: 0.2,
                           **options)
  end

  def row_text(driver, key, field)
    driver.find_element(css: %(tr[data-key="#{key}"] td[data-field="#{field}"])).text
  end

  def test_the_rows_count_down_and_follow_the_store_in_place
    grant("a", 7, ttl: 60.0)
    browse(dashboard) do |driver, url|
      driver.navigate.to(url)
      assert_equal "Resources · lease_machines", driver.title
      assert_equal "14px", driver.execute_script("return getComputedStyle(document.body).fontSize"), "the style ran"
      left = wait_for("the time left never counted down") do
        text = row_text(driver, "0:a", "remaining")
        text if text.match?(/\A5\d\.\d s\z/)
      end
      assert_operator Float(left[/\A[\d.]+/]), :<, 60.0
      driver.execute_script(%(window.before = document.querySelector('tr[data-key="0:a"]')))

      @store.release(resource: "a", owner: 7, token: 1, now: @time)
      hostile = "<img src=x onerror=alert(1)>"
      grant(hostile, 8)
      wait_for("the new row never came") { driver.find_elements(css: "table.rows tbody tr").size == 2 }
      wait_for("the released row never turned free") { row_text(driver, "0:a", "state") == "free" }
      assert driver.execute_script(%(return document.querySelector('tr[data-key="0:a"]') === window.before)),
             "the row was updated in place, the page not reloaded"
      assert_equal ["—", "—", "—"], %w[owner token remaining].map { row_text(driver, "0:a", _1) }
      assert_equal [hostile, "8", "held"], %w[resource owner state].map { row_text(driver, "0:#{hostile}", _1) }
      assert_empty driver.find_elements(css: "table.rows img"), "the name was written as text"
      assert_equal "2", driver.find_element(css: ".count").text
      assert_equal "live, every 0.2 s", driver.find_element(css: ".live-status").text
    end
  end

  def test_the_timeline_follows_new_events
    grant("r", 7, ttl: 60.0)
    browse(dashboard) do |driver, url|
      driver.navigate.to("#{url}resource?name=r")
      assert_equal 1, driver.find_elements(css: "table.events tbody tr").size
      @store.fenced(resource: "r", token: 1, now: @time) { nil }
      @store.renew(resource: "r", owner: 7, token: 1, ttl: 60.0, now: @time + 1)
      wait_for("the new events never came") { driver.find_elements(css: "table.events tbody tr").size == 3 }
      kinds = driver.find_elements(css: "table.events tbody tr").map { _1.find_elements(css: "td")[3].text }
      assert_equal %w[acquired write_accepted renewed], kinds
      wait_for("the timeline was never drawn again") { driver.find_elements(css: ".timeline circle.write-accepted").size == 1 }
      assert_equal 1, driver.find_elements(css: ".timeline g.grant line.renewal").size
    end
  end

  # An event that commits after one with a greater id is merged into the table in its place when the next poll reads
  # the newest events again; no row twice.
  def test_the_timeline_merges_a_late_event_by_id
    lease = grant("r", 7, ttl: 60.0)
    2.times { |i| @store.renew(resource: "r", owner: 7, token: lease.token, ttl: 60.0, now: @time + i + 1) }
    commit = hold_back_event(@store.events(resource: "r")[1].id)
    ids = ->(driver) { driver.find_elements(css: "table.events tbody tr").map { _1.attribute("data-id") } }
    browse(dashboard) do |driver, url|
      driver.navigate.to("#{url}resource?name=r")
      assert_equal %w[1 3], ids.(driver)
      commit.()
      wait_for("the late event was never merged") { ids.(driver) == %w[1 2 3] }
      @store.fenced(resource: "r", token: lease.token, now: @time + 3) { nil }
      wait_for("the next event never came") { ids.(driver) == %w[1 2 3 4] }
      sleep 0.5 # more polls of the same window
      assert_equal %w[1 2 3 4], ids.(driver), "each event once"
      wait_for("the timeline was never drawn again") { driver.find_elements(css: ".timeline line.renewal").size == 2 }
    end
  end

  def test_the_revoke_button_revokes_through_the_browsers_own_request
    grant("r", 7, ttl: 60.0)
    admitted = []
    authorize = lambda do |request|
      admitted << request.get_header("HTTP_SEC_FETCH_SITE") if request.post?
      true
    end
    browse(dashboard(actions: true, authorize: authorize)) do |driver, url|
      driver.navigate.to(url)
      driver.find_element(css: %(tr[data-key="0:r"] form.revoke button)).click
      notice = wait_for("the notice never showed") { driver.find_element(css: ".flash").text }
      assert_equal "Revoked the lease of slot 0; token 1 is fenced from now on.", notice
      assert_equal "r", driver.find_element(css: "h1").text
      assert_equal ["same-origin"], admitted, "the browser said where the request came from"
    end
    assert_nil @store.resources.first.lease_at(@time)
    assert_equal :revoked, @store.events(resource: "r").last.kind
  end
end
