# frozen_string_literal: true

require_relative "support/web_support"
require "support/dummy_app"

# The dashboard mounted in a Rails application (test/dummy's config/routes.rb: mount LeaseMachines::Web =>
# "/leases"), with no configuration of its own: its store is the jobs', the application's database. The application
# boots in a child process (a copy of test/dummy, as the Railtie's tests run it), whose script asks the pages through
# Rack::Test against Rails.application.
class RailsMountTest < Minitest::Test
  include LeaseMachines::WebSupport
  include LeaseMachines::TestSupport::DummyApp

  R = "NightlyReportJob:Account/1"

  def setup
    super
    @app_dir = copy_dummy_app("lm-web-dummy")
  end

  def test_the_mounted_dashboard_shows_the_applications_leases
    output, status = dummy_rails(@app_dir, "runner", "script/leases_dashboard.rb")
    assert status.success?, output
    facts = JSON.parse(output.lines.last)
    pages = facts.fetch("pages")
    assert facts.fetch("default_store"), "the jobs' store, with nothing configured"

    index = pages.fetch("/leases")
    assert_equal [200, "text/html; charset=utf-8"], index.values_at("status", "type")
    html = index.fetch("body")
    assert_includes html, %(<td data-field="resource"><a href="/leases/resource?name=NightlyReportJob%3AAccount%2F1&amp;slot=0">#{R}</a></td>)
    assert_includes html, %(<td data-field="owner">7</td>)
    assert_includes html, %(<nav><a href="/leases/">Resources</a> <a href="/leases/audit">Audit</a> <a href="/leases/metrics">Metrics</a></nav>)
    assert_includes html, "Database: <code>#{File.join(File.realpath(@app_dir), "db/test.sqlite3")}</code> · read-only"
    assert_equal 200, pages.fetch("/leases/").fetch("status")

    rows = JSON.parse(pages.fetch("/leases/resources.json").fetch("body")).fetch("rows")
    assert_equal [[R, 7, 1, "held"]], rows.map { _1.values_at("resource", "owner", "token", "state") }
    resource = pages.fetch("/leases/resource?name=NightlyReportJob%3AAccount%2F1")
    assert_equal 200, resource.fetch("status")
    assert_includes resource.fetch("body"), "<h1>#{R}</h1>"
    metrics = pages.fetch("/leases/metrics")
    assert_equal "text/plain; version=0.0.4; charset=utf-8", metrics.fetch("type")
    assert_match(/^lease_machines_leases_held 1$/, metrics.fetch("body"))
    assert_includes pages.fetch("/leases/audit").fetch("body"), %(<p class="valid">valid, 1 event checked</p>)
    assert_equal [404, "404 Not Found: no page at \"/nowhere\"\n"], pages.fetch("/leases/nowhere").values_at("status", "body")
    revoke = pages.fetch("POST /leases/revoke")
    assert_equal 403, revoke.fetch("status"), "read-only: nothing configured actions"
  end
end
