# frozen_string_literal: true

require "support/browser"
begin
  require "lease_machines/web"
rescue LoadError
  nil # no rack for this Ruby: the test says so (setup)
end

module LeaseMachines
  # The dashboard as a person uses it, in headless Chromium: the resources page, a lease that changes hands while the
  # page stays open (no reload), the resource followed to its timeline, and a screenshot of it.
  class DashboardBrowserTest < Minitest::Test
    include TestSupport::Browser

    R = "nightly-report"

    def setup
      skip "rack is not installed for this Ruby" unless defined?(LeaseMachines::Web)
      requires_sqlite3!
      @path = File.join(scratch_dir("lease_machines-dashboard"), "leases.sqlite3")
      @store = LeaseMachines::Store.new(@path)
    end

    def teardown
      @store&.close
      super
    end

    def cell(driver, field)
      driver.find_element(css: %(tr[data-key] td[data-field="#{field}"])).text
    end

    def test_a_lease_changes_hands_on_the_open_page_and_the_timeline_shows_worker_sevens_night
      # Worker 7 holds the report's lease on the store's own clock (the machine's wall clock) and writes once.
      grant = @store.acquire(resource: R, owner: 7, ttl: 300.0).lease
      @store.fenced(resource: R, token: grant.token) { nil }
      app = LeaseMachines::Web.new(store: -> { LeaseMachines::Store.new(@path) }, poll_every: 0.25)
      png = File.join(scratch_dir("lease_machines-dashboard-png"), "timeline.png")
      browse(app) do |driver, url|
        driver.navigate.to(url)
        assert_equal %w[7 1 1 held], %w[owner token highest state].map { cell(driver, _1) }
        left = cell(driver, "remaining")
        driver.execute_script("window.leaseMachinesMarker = 'same page'")

        # Worker 7 is revoked and worker 9 granted, by another process's store: the open page follows.
        @store.revoke(resource: R, token: grant.token)
        @store.acquire(resource: R, owner: 9, ttl: 300.0)
        wait_for("the page never showed worker 9's lease") { cell(driver, "owner") == "9" }
        assert_equal %w[9 2 held], %w[owner token state].map { cell(driver, _1) }
        assert_equal "same page", driver.execute_script("return window.leaseMachinesMarker"), "updated without reload"
        refute_equal left, cell(driver, "remaining"), "the time left counts down"

        # Worker 7 wakes and writes with its old token: refused. The timeline shows it.
        assert_raises(LeaseMachines::Fenced) { @store.fenced(resource: R, token: grant.token) { flunk } }
        driver.find_element(css: %(td[data-field="resource"] a)).click
        wait_for("the timeline page never opened") { driver.find_elements(css: ".timeline svg").any? }
        assert_includes driver.current_url, "/resource"
        svg = driver.find_element(css: ".timeline svg").attribute("outerHTML")
        assert_includes svg, "token 1"
        assert_includes svg, "token 2"
        kinds = driver.find_elements(css: "table.events tr[data-id]").map { _1.attribute("class") }
        assert_equal %w[kind-acquired kind-write_accepted kind-revoked kind-acquired kind-write_refused], kinds
        assert_equal png, save_png(driver, png)
      end
      assert File.binread(png).start_with?(TestSupport::Browser::PNG_SIGNATURE)
      FileUtils.cp(png, ENV["LEASE_MACHINES_KEEP_PNG"]) if ENV["LEASE_MACHINES_KEEP_PNG"]
    end
  end
end
